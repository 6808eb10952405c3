"""Boots-to-best, SIMULATED: the search replayed over recorded campaign landscapes (every cell booted for real once,
its verdict on disk), against the full grid: the boots and GPU-seconds each spent, and the gap between the
search's best cell and the grid's. No boot happens here: each proposed cell's recorded verdict answers it.

    python bench/search_replay.py [--band 0.03]

Landscapes: every campaign under tests/data whose cells all have verdicts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from redline.ledger.campaign_file import read_verdicts  # noqa: E402
from redline.models.search import SearchSpec  # noqa: E402
from redline.ops.campaign.plan import load_campaign  # noqa: E402
from redline.policy.ranking import cell_sample  # noqa: E402
from redline.policy.search import Candidate, Measured, Stop, propose  # noqa: E402


def landscapes() -> list[Path]:
    found = []
    data = ROOT / "tests" / "data"
    for path in sorted({*data.glob("*/*.yml"), *data.glob("*/*/campaign.yml")}):
        try:
            loaded = load_campaign(path)
        except Exception:  # noqa: BLE001 - not a campaign file
            continue
        if loaded.names and len(read_verdicts(loaded.results, loaded.names)) == len(loaded.names):
            found.append(path)
    return found


def replay(path: Path, band: float, spec: SearchSpec) -> dict[str, object]:
    loaded = load_campaign(path)
    verdicts = read_verdicts(loaded.results, loaded.names)
    sign = -1.0 if loaded.campaign.focus == "latency" else 1.0
    cells = [Candidate(c.name, c.model_dump(exclude={"name"}, exclude_none=True)) for c in loaded.cells]
    truth = {}
    for n in loaded.names:
        sample, _ = cell_sample(loaded.campaign, verdicts[n])
        truth[n] = None if sample is None or verdicts[n].verdict != "green" else sign * sample.mean
    cost = {n: verdicts[n].wall_s * max(verdicts[n].context.hardware.gpu_count, 1) for n in loaded.names}
    measured: dict[str, Measured] = {}
    history: list[str] = []
    while not isinstance(step := propose(cells, loaded.names[0], measured, history, spec, band=band), Stop):
        measured[step.cell] = Measured(truth[step.cell], gpu_s=cost[step.cell])
        history.append(step.cell)
    scored = [v for v in truth.values() if v is not None]
    best_grid = max(scored)
    best_search = max(v for n in history if (v := truth[n]) is not None)
    return {
        "landscape": path.relative_to(ROOT).as_posix(),
        "cells": len(cells),
        "boots": len(history),
        "gpu_s": sum(cost[n] for n in history),
        "grid_gpu_s": sum(cost.values()),
        "gap_pct": 100 * (best_grid - best_search) / abs(best_grid),
        "stopped": step.why,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--band", type=float, default=0.03, help="the noise band, as a fraction (default 3%%)")
    args = parser.parse_args()
    print("SIMULATED: recorded verdicts answer each proposed cell; nothing boots")
    for path in landscapes():
        r = replay(path, args.band, SearchSpec())
        print(
            f"{r['landscape']}: {r['boots']} of {r['cells']} boots, {r['gpu_s']:.0f} of {r['grid_gpu_s']:.0f} "
            f"GPU-s, champion {r['gap_pct']:.2f}% below the grid's best; stopped: {r['stopped']}"
        )


if __name__ == "__main__":
    main()
