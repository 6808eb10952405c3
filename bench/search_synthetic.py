"""Search against random search over generated landscapes, SIMULATED: many spaces whose truth is known, so a change
to the search is judged over more than the few recorded ones (bench/search_replay.py) and not tuned to their ties.

    python bench/search_synthetic.py [--landscapes 400] [--shuffles 8]

Each landscape: 2 to 5 levers (numeric ones powers of two, two doublings apart; categorical ones 2 or 3 values), a
grid of at most 36 cells, its baseline drawn among them. A cell's truth is 1 plus each lever value's effect (a
lever's size drawn from 10% to 100% of the landscape's; a numeric lever's effect smooth in its values), plus each
pair of values' interaction (up to half the levers' size) and the cell's own part (up to a quarter): mostly
additive, as the recorded landscapes are (an additive fit leaves 1.4% of 8.9% on the 8B load scenario, 2.8% of 21%
on its TTFT). The landscape's size is drawn from 1% to 25%, one boot's noise (cv) from 0.5% to 8%; each cell
answers with one boot, and the band is what that cv measured over 6 boots gives (t x cv x sqrt 2).

Per budget (a share of the grid's cells), over the landscapes: redline's gap to the best (its crowned cell is the
best it measured, as in the replay) less random search's median gap over `--shuffles` orders, in % of the best and
in shares of the landscape's spread (the best less the median cell), by signal to noise (the landscape's size over
the cv), with the landscapes where redline's crown is better, tied, worse. Then redline's own stop rules: the share
of the grid they boot, and how often the champion they stop at is outside the band (a premature stop).
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from redline.models.search import SearchSpec  # noqa: E402
from redline.policy.noise import measured_band  # noqa: E402
from redline.policy.search import Candidate, Measured, SearchStop, next_cell, propose  # noqa: E402

SHARES = (1 / 6, 1 / 3, 1 / 2)  # budgets, as a share of the grid's cells
STRATA = ((0.0, 1.0), (1.0, 3.0), (3.0, math.inf))  # signal to noise: the landscape's size over one boot's cv


@dataclass(frozen=True)
class Generated:
    cells: list[Candidate]
    truth: dict[str, float]
    boot: dict[str, float]  # each cell's one boot
    baseline: str
    cv: float
    band: float
    snr: float


def _levers(rng: random.Random) -> dict[str, list[object]]:
    levers: dict[str, list[object]] = {}
    for i in range(rng.choice([2, 3, 3, 4, 4, 5])):
        if rng.random() < 0.5:
            levers[f"n{i}"] = [2 ** (10 + 2 * k) for k in range(rng.choice([2, 3, 4]))]
        else:
            levers[f"c{i}"] = [f"v{k}" for k in range(rng.choice([2, 2, 3]))]
    return levers


def _effects(rng: random.Random, levers: dict[str, list[object]], size: float) -> dict[tuple[str, object], float]:
    effects = {}
    for lever, values in levers.items():
        own = size * math.exp(rng.uniform(math.log(0.1), 0.0))
        slope, bend = rng.gauss(0, own), rng.gauss(0, own)
        for j, value in enumerate(values):
            z = 2 * j / (len(values) - 1) - 1 if len(values) > 1 else 0.0
            smooth = slope * z + bend * (z * z - 0.5) + rng.gauss(0, own / 4)
            effects[(lever, value)] = smooth if lever.startswith("n") else rng.gauss(0, own)
    return effects


def generate(seed: int) -> Generated:
    rng = random.Random(seed)
    levers = _levers(rng)
    names = list(levers)
    cells = [
        Candidate("-".join(f"{n}{v}" for n, v in zip(names, combo, strict=True)), dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*levers.values())
    ]
    if len(cells) > 36:
        return generate(seed + 1_000_003)
    size = math.exp(rng.uniform(math.log(0.01), math.log(0.25)))
    pair_size, own_size = size * rng.uniform(0, 0.5), size * rng.uniform(0, 0.25)
    cv = math.exp(rng.uniform(math.log(0.005), math.log(0.08)))
    effects, pairs = _effects(rng, levers, size), dict[tuple[object, ...], float]()
    truth = {}
    for cell in cells:
        items = sorted(cell.levers.items())
        score = 1.0 + sum(effects[item] for item in items) + rng.gauss(0, own_size)
        for a, b in itertools.combinations(items, 2):
            score += pairs.setdefault((*a, *b), rng.gauss(0, pair_size))
        truth[cell.name] = 1000 * max(score, 0.05)
    boot = {n: t * (1 + rng.gauss(0, cv)) for n, t in truth.items()}
    band = measured_band(cv, 6, "generated").pct / 100
    return Generated(cells, truth, boot, rng.choice(cells).name, cv, band, size / cv)


def _gaps(land: Generated, order: list[str]) -> list[float]:
    """After each boot, the gap (% of the best) of the cell crowned: the best one measured."""
    best, crown, out = max(land.truth.values()), None, []
    for name in order:
        if crown is None or land.boot[name] > land.boot[crown]:
            crown = name
        out.append(100 * (best - land.truth[crown]) / best)
    return out


def _redline(land: Generated, seed: int, stops: bool) -> list[str]:
    measured: dict[str, Measured] = {}
    history: list[str] = []
    spec = SearchSpec(seed=seed)
    while True:
        args = (land.cells, land.baseline, measured)
        step = propose(*args, history, spec, band=land.band, noise=land.cv) if stops else None
        if isinstance(step, SearchStop):
            return history
        step = step or next_cell(*args, spec, band=land.band, noise=land.cv)
        if step is None:
            return history
        measured[step.cell] = Measured(land.boot[step.cell])
        history.append(step.cell)


def run(landscapes: int, shuffles: int) -> None:
    rows: dict[tuple[float, int], list[tuple[float, float, float]]] = {}  # (share, stratum) -> (diff, rnd, spread)
    stopped, premature = [], 0
    for seed in range(landscapes):
        land = generate(seed)
        n = len(land.cells)
        own = _gaps(land, _redline(land, seed, stops=False))
        blind = [
            _gaps(land, random.Random(f"{seed}:{k}").sample([c.name for c in land.cells], n)) for k in range(shuffles)
        ]
        spread = max(land.truth.values()) - statistics.median(land.truth.values())
        stratum = next(i for i, (lo, hi) in enumerate(STRATA) if lo <= land.snr < hi)
        for share in SHARES:
            b = max(1, round(share * n)) - 1
            rnd = statistics.median(g[b] for g in blind)
            rows.setdefault((share, stratum), []).append((own[b] - rnd, rnd, 100 * spread / max(land.truth.values())))
        boots = _redline(land, seed, stops=True)
        stopped.append(len(boots) / n)
        premature += _gaps(land, boots)[-1] > 100 * land.band
    print(f"SIMULATED: {landscapes} generated landscapes, random search's median over {shuffles} orders each")
    print("redline's gap less random's: % of the best (mean) / share of the spread; its crown better / tied / worse:")
    for share in SHARES:
        cells = []
        for stratum, (lo, hi) in enumerate(STRATA):
            got = rows.get((share, stratum), [])
            if not got:
                continue
            diff = statistics.fmean(d for d, _, _ in got)
            rel = sum(d for d, _, _ in got) / sum(s for _, _, s in got)
            won, tied = sum(d < -1e-9 for d, _, _ in got), sum(abs(d) <= 1e-9 for d, _, _ in got)
            cells.append(
                f"snr {lo:g}-{hi:g} ({len(got)}): {diff:+.2f}% / {rel:+.3f}, {won}/{tied}/{len(got) - won - tied}"
            )
        print(f"  {100 * share:.0f}% of the grid: " + "; ".join(cells))
    print(
        f"its own stop rules: {100 * statistics.fmean(stopped):.0f}% of the grid booted (mean); the champion outside "
        f"the band at {premature} of {landscapes} stops"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landscapes", type=int, default=400, help="generated landscapes (default 400)")
    parser.add_argument("--shuffles", type=int, default=8, help="random search's orders per landscape (default 8)")
    args = parser.parse_args()
    if args.landscapes < 1 or args.shuffles < 1:
        parser.error("--landscapes and --shuffles: at least 1")
    run(args.landscapes, args.shuffles)


if __name__ == "__main__":
    main()
