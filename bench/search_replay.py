"""Search against blind search, SIMULATED: redline's search, random search and TPE (Optuna) replayed over recorded
landscapes (bench/landscapes.py) at equal boot budgets. No boot happens here: each proposed cell is answered by one
of its recorded boots (drawn per seed, the same draw for every method: a cell booted twice answers with either).

    python bench/search_replay.py [--seeds 100] [--landscape CAMPAIGN_FILE --scenario [workload:]c:metric ...]

Per landscape and scenario, per budget (1 boot to the number of cells recorded), over the seeds: the median and
worst gap between the landscape's best cell and the cell each method would crown (the best it measured), as a
percent of the best (a cell's score is the mean of its recorded boots); then the boots each took to crown a cell
inside the best's noise band (measured between the replicates' boots; else the 3% default, and it says so). "-":
nothing it booted held. Budgets are boots: a cell that fails to boot costs one, whoever proposed it. redline's
search never proposes a cell the memory model predicted infeasible (the verdicts' `predicted`); blind search
does, and pays its boot. redline's search is handed the landscape's band and noise per boot (measured between
its replicates: a real run measures them with its own replicate boots, beyond the search's budget), and is
replayed as if its stop rules were off (a larger budget boots what it would propose next); where its own rules
stop it is said beside the table.

TPE is Optuna's TPESampler with its defaults (bench-only: `pip install optuna`), over one categorical parameter
per lever (a cell that leaves a lever unset takes "unset"); a combination that is no cell of the landscape stands
for the cell nearest it (the fewest levers apart); a cell already booted costs no boot and is told its measured
score again; a failed boot is told as the worst score. After 50 asks in a row that boot nothing, a random cell left
is booted and told to it.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from landscapes import ROOT, Landscape, parse_scenario, read_landscape, shipped  # noqa: E402

from redline.models.search import SearchSpec  # noqa: E402
from redline.policy.search import Measured, Proposal, SearchStop, next_cell, propose  # noqa: E402

Answer = Callable[[str], float | None]
STALE_ASKS = 50  # TPE asks in a row that boot nothing before a random cell left is booted for it
FAILED = -1e18  # what TPE is told a failed boot scored: below every real score


@dataclass(frozen=True)
class Walk:
    """One method's boots on one seed, in order, each with the score it measured (None: failed)."""

    booted: list[tuple[str, float | None]]
    stopped_at: int | None = None  # redline's: after how many boots its own rules stopped it
    stopped_why: str = ""


def answers(land: Landscape, seed: int) -> Answer:
    """Each cell's answer on this seed: one of its recorded boots, drawn once (every method gets the same)."""
    drawn = {n: random.Random(f"{seed}:{n}").choice(b) for n, b in land.boots.items()}
    return drawn.__getitem__


def redline(land: Landscape, seed: int, answer: Answer) -> Walk:
    spec = SearchSpec(seed=seed)
    measured: dict[str, Measured] = {}
    history: list[str] = []
    stopped_at, why = None, ""
    while True:
        args = (list(land.cells), land.baseline, measured)
        step: Proposal | SearchStop | None = None
        if stopped_at is None:
            step = propose(*args, history, spec, band=land.band, noise=land.noise, infeasible=land.infeasible)
            if isinstance(step, SearchStop):
                stopped_at, why = len(history), step.why
        if not isinstance(step, Proposal):
            step = next_cell(*args, spec, band=land.band, noise=land.noise, infeasible=land.infeasible)
        if step is None:
            return Walk([(n, measured[n].score) for n in history], stopped_at, why)
        measured[step.cell] = Measured(answer(step.cell))
        history.append(step.cell)


def blind_random(land: Landscape, seed: int, answer: Answer) -> Walk:
    order = [c.name for c in land.cells]
    random.Random(seed).shuffle(order)
    return Walk([(n, answer(n)) for n in order])


def tpe(land: Landscape, seed: int, answer: Answer) -> Walk:
    import optuna
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import create_trial

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    levers = sorted({lv for c in land.cells for lv in c.levers})
    combo = {c.name: tuple(repr(c.levers[lv]) if lv in c.levers else "unset" for lv in levers) for c in land.cells}
    by_combo = {v: n for n, v in combo.items()}
    space = {lv: CategoricalDistribution(sorted({combo[c.name][i] for c in land.cells})) for i, lv in enumerate(levers)}
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    rng, booted, stale = random.Random(seed), dict[str, float | None](), 0
    while len(booted) < len(land.cells):
        if stale >= STALE_ASKS:
            name = rng.choice([c.name for c in land.cells if c.name not in booted])
            booted[name] = answer(name)
            told = booted[name]
            params = dict(zip(levers, combo[name], strict=True))
            study.add_trial(create_trial(params=params, distributions=space, value=FAILED if told is None else told))
            stale = 0
            continue
        trial = study.ask(space)
        asked = tuple(trial.params[lv] for lv in levers)
        name = by_combo.get(asked) or _nearest(asked, combo, rng)
        if name in booted:
            stale += 1
        else:
            booted[name], stale = answer(name), 0
        score = booted[name]
        study.tell(trial, FAILED if score is None else score)
    return Walk(list(booted.items()))


def _nearest(asked: tuple[str, ...], combo: dict[str, tuple[str, ...]], rng: random.Random) -> str:
    """The cell whose lever values differ from the combination TPE asked for in the fewest levers (ties: drawn)."""
    far = {n: sum(a != b for a, b in zip(asked, c, strict=True)) for n, c in combo.items()}
    return rng.choice(sorted(n for n, d in far.items() if d == min(far.values())))


METHODS: dict[str, Callable[[Landscape, int, Answer], Walk]] = {"redline": redline, "random": blind_random, "tpe": tpe}


def crowned(land: Landscape, walk: Walk, budget: int) -> float | None:
    """The gap (percent of the best) of the cell the method crowns after `budget` boots; None: none held."""
    held = [(score, n) for n, score in walk.booted[:budget] if score is not None]
    if not held:
        return None
    _, best = land.best
    truth = land.truth(max(held)[1])
    assert truth is not None
    return 100 * (best - truth) / abs(best)


def to_band(land: Landscape, walk: Walk) -> int | None:
    """The boots after which the crowned cell is inside the best's noise band; None: never."""
    for budget in range(1, len(walk.booted) + 1):
        gap = crowned(land, walk, budget)
        if gap is not None and gap <= 100 * land.band:
            return budget
    return None


def _median(values: Sequence[float | None]) -> float | None:
    known = sorted(float("inf") if v is None else v for v in values)
    m = statistics.median(known)
    return None if m == float("inf") else m


def _worst(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else max(v for v in values if v is not None)


def replay(land: Landscape, seeds: int, methods: Sequence[str]) -> dict[str, Any]:
    """Each method's median and worst gap per budget, and its boots to the band, over the seeds."""
    n = len(land.cells)
    walks = {m: [METHODS[m](land, s, answers(land, s)) for s in range(seeds)] for m in methods}
    result: dict[str, Any] = {
        "landscape": land.name,
        "scenario": str(land.scenario),
        "cells": n,
        "grid": land.grid,
        "infeasible": len(land.infeasible),
        "best": {"cell": land.best[0], "score": land.scenario.sign * land.best[1]},
        "band_pct": 100 * land.band,
        "band": land.band_source,
        "seeds": seeds,
        "methods": {},
    }
    for m, ws in walks.items():
        gaps = [[crowned(land, w, b) for w in ws] for b in range(1, n + 1)]
        reach = [to_band(land, w) for w in ws]
        entry: dict[str, Any] = {
            "median_gap_pct": [_median(g) for g in gaps],
            "worst_gap_pct": [_worst(g) for g in gaps],
            "to_band_median": _median([None if r is None else float(r) for r in reach]),
            "to_band_worst": _worst([None if r is None else float(r) for r in reach]),
        }
        if m == "redline":
            stops = [w.stopped_at for w in ws if w.stopped_at is not None]
            entry["stops_median"] = statistics.median(stops) if stops else None
            entry["stop_gap_median"] = _median([crowned(land, w, w.stopped_at or n) for w in ws])
            entry["stop_why"] = ws[0].stopped_why
        result["methods"][m] = entry
    return result


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _boots(v: float | None) -> str:
    return "never" if v is None else f"{v:g}"


def table(r: dict[str, Any]) -> str:
    methods = list(r["methods"])
    partial = f" of the grid's {r['grid']}" if r["grid"] != r["cells"] else ""
    lines = [
        f"{r['landscape']}: {r['scenario']}; {r['cells']} cells recorded{partial}, {r['infeasible']} predicted "
        f"infeasible; best {r['best']['cell']} ({r['best']['score']:,.4g}); band {r['band']}; {r['seeds']} seeds",
        "gap to the best, % (median / worst):",
        "| boots | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for b in range(r["cells"]):
        row = [f"{_pct(e['median_gap_pct'][b])} / {_pct(e['worst_gap_pct'][b])}" for e in r["methods"].values()]
        lines.append(f"| {b + 1} | " + " | ".join(row) + " |")
    reach = [f"{_boots(e['to_band_median'])} / {_boots(e['to_band_worst'])}" for e in r["methods"].values()]
    lines.append("| to the band (median / worst) | " + " | ".join(reach) + " |")
    if (own := r["methods"].get("redline")) is not None and own["stops_median"] is not None:
        lines.append(
            f"redline's own stop rules: after {own['stops_median']:g} boots (median), its champion "
            f"{_pct(own['stop_gap_median'])}% under the best (median); on seed 0: {own['stop_why']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds per method (default 100)")
    parser.add_argument("--landscape", type=Path, help="a campaign file to replay instead of the shipped ones")
    parser.add_argument(
        "--scenario", action="append", default=[], help="with --landscape: [workload:]concurrency:metric (repeatable)"
    )
    parser.add_argument("--methods", default="redline,random,tpe", help="comma-separated (default: all three)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if bool(args.landscape) != bool(args.scenario):
        parser.error("--landscape and --scenario go together")
    methods = args.methods.split(",")
    if unknown := [m for m in methods if m not in METHODS]:
        parser.error(f"--methods: no method {unknown[0]!r}; methods are {', '.join(METHODS)}")
    missing: list[str] = []
    try:
        runs, missing = (
            ([(args.landscape, parse_scenario(s), ()) for s in args.scenario], []) if args.landscape else shipped()
        )
    except ValueError as exc:
        parser.error(str(exc))
    results = []
    for path, scenario, also in runs:
        r = replay(read_landscape(path, scenario, also), args.seeds, methods)
        r["path"] = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else str(path)
        results.append(r)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print("SIMULATED: recorded boots answer each proposed cell; nothing boots")
    for name in missing:
        print(f"\n{name}: listed, not recorded yet (no cell has a verdict)")
    for r in results:
        print(f"\n{r['path']}\n{table(r)}")


if __name__ == "__main__":
    main()
