"""bench/search_synthetic.py still runs, and its landscapes are what it says: the grid's cells, each answered with one
boot about its truth, the baseline among them, the same landscape for the same seed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "search_synthetic.py"
sys.path.insert(0, str(BENCH.parent))

from search_synthetic import generate  # noqa: E402


def test_the_bench_prints_each_budget_and_its_stop_rules() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--landscapes", "4", "--shuffles", "2"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("SIMULATED: 4 generated landscapes")
    assert [line.split(":")[0].strip() for line in lines[2:5]] == [
        "17% of the grid",
        "33% of the grid",
        "50% of the grid",
    ]
    assert lines[-1].startswith("its own stop rules: ") and "of 4 stops" in lines[-1]


def test_a_landscape_is_a_grid_whose_cells_answer_about_their_truth() -> None:
    for seed in range(20):
        land = generate(seed)
        assert 4 <= len(land.cells) <= 36 and land.baseline in land.truth
        assert {c.name for c in land.cells} == set(land.truth) == set(land.boot)
        assert all(abs(land.boot[n] / t - 1) < 6 * land.cv for n, t in land.truth.items())
        assert land.band > 2 * land.cv  # a band t x cv x sqrt(2) over 6 boots
        assert generate(seed) == land
