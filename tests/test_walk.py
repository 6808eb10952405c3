"""docs/architecture.md's walk of one campaign_run cannot drift: it is what bench/call_trace.py traces.

The bench drives the real MCP server in this process against the fake engine and traces a cold and a warm
campaign_run (and a rung_run each); the doc's walk lists the modules the warm campaign_run ran code in, and says how
many. Regenerate the walk with `python bench/call_trace.py --walk`. Slow: four calls, each a fake engine boot.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
STEP = re.compile(r"^\d+\. `([a-z_/]+\.py)`$")

pytestmark = pytest.mark.slow


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("call_trace", ROOT / "bench" / "call_trace.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["call_trace"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def traced() -> tuple[Any, dict[str, Any]]:
    bench = _bench()
    return bench, anyio.run(bench.measure)


def test_the_walk_in_docs_architecture_is_the_traced_campaign_run(traced) -> None:  # noqa: ANN001
    bench, figures = traced
    text = ARCHITECTURE.read_text(encoding="utf-8")
    walked = [m.group(1) for line in text.splitlines() if (m := STEP.match(line))]
    traced = figures[bench.WALK]["module_list"]
    assert sorted(walked) == sorted(traced), "regenerate the walk: python bench/call_trace.py --walk"
    said = bench.walk(figures).split("\n")[0]
    stated = re.search(r"runs code in (\d+) modules in (\d+) folders", said)
    assert stated is not None and stated.group(0) in text


def test_a_warm_campaign_run_walks_no_folder_of_recorded_boots(traced) -> None:  # noqa: ANN001
    """Recorded boots are read through the workspace's index (ledger/boots_index.py): a warm cell globs none, and
    lists the shipped corpus no more (it is listed once per process)."""
    bench, figures = traced
    walks = figures[bench.WALK]["walks"]
    assert not [w for w in walks if w.startswith(("ops/predict/", "ledger/boots_index.py"))], walks


def test_a_campaign_cell_reads_no_ladder_and_a_rung_no_campaign(traced) -> None:  # noqa: ANN001
    """What each call does not need, it does not run: a warm campaign cell reads no ladder file (a ladder's every
    write keeps the workspace's recorded boots current) and judges by no A/B test or ranking; a rung reads no
    campaign file."""
    bench, figures = traced
    cell, rung = figures[bench.WALK]["module_list"], figures["rung_run, warm"]["module_list"]
    assert not {"ledger/ladder_file.py", "policy/welch.py", "policy/ranking.py"} & set(cell), cell
    assert "ledger/campaign_file.py" not in rung, rung
