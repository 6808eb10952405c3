"""One judge for every metric an A/B or a baseline diff reports (issue 31, item 3): the A/B names every guarded metric
worse beyond its noise beside its focus verdict, with the diff's colours, and the two agree on every metric's call.

The UX run's case, over MCP: an A/B said "no improvement" on output throughput while perf_baseline_diff of the same
trials was RED for a 2.6x median TPOT regression (46.05 -> 121.54 ms). Its shape is built on the real H200 A/B
(tests/data/vllm-0.26.0-h200-ab, 3 trials per arm, every other figure as measured): each trial's median TPOT is set
to the UX run's (46.05 ± 0.25 ms against 121.54 ± 0.25 ms), a constructed figure, said here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from ruamel.yaml import YAML

from redline.server.app import build_server
from tests.server.helpers import Env, call

pytestmark = pytest.mark.anyio

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab"
TPOT = {"mnbt2048": (45.80, 46.05, 46.30), "mnbt8192": (121.29, 121.54, 121.79)}  # ms, trials 1 to 3


def ux_shape(workspace: Path) -> dict[str, Any]:
    """The H200 A/B in the workspace with the UX run's median TPOT in every trial; its spec."""
    shutil.copytree(DATA / "ab", workspace / "ab")
    yaml = YAML()
    for arm, values in TPOT.items():
        for k, tpot in enumerate(values, 1):
            path = workspace / "ab" / "l8b-mnbt" / "trials" / f"{arm}-{k}" / "trial.yml"
            trial = yaml.load(path)
            trial["points"][0]["figures"]["median_tpot_ms"] = tpot
            yaml.dump(trial, path)
    return YAML(typ="safe").load((DATA / "ab" / "l8b-mnbt.yml").read_text())


async def test_the_ab_names_the_tpot_regression_the_diff_calls_red_and_agrees_on_every_metric(env: Env) -> None:
    spec = ux_shape(env.workspace)
    async with Client(build_server(env.config)) as client:
        job = await call(client, "ab_run", spec=spec, i_understand_this_submits_jobs=True, wait_s=60)
        await call(client, "perf_baseline_record", name="seqs", ab="l8b-mnbt", arm="mnbt2048")
        diff = await call(client, "perf_baseline_diff", baseline="seqs", ab="l8b-mnbt", arm="mnbt8192")
        frontier = await call(client, "lever_frontier")
    assert job["state"] == "succeeded" and job["result"]["ran"] == []  # every trial on disk: nothing booted
    ab = job["result"]
    # throughput inside the noise, TPOT 2.6x worse: every metric is judged, so the arm is a regression (issue 40), as
    # the frontier records it
    assert ab["verdict"]["outcome"] == "regression"
    (arm,) = [a for a in ab["verdict"]["arms"] if a["arm"] == "mnbt8192"]
    assert arm["outcome"] == "regression" and "median_tpot_ms worse by 163.93%" in arm["why"]
    (guard,) = ab["guards"]
    assert (guard["arm"], guard["against"], guard["colour"]) == ("mnbt8192", "mnbt2048", "RED") and diff[
        "colour"
    ] == "RED"
    assert "median_tpot_ms worse by 163.93% at c=128" in guard["regressed"]  # 46.05 -> 121.54 ms, named
    said = "Every metric, as perf_baseline_diff judges it: mnbt8192 RED: "
    assert said in ab["summary"] and "median_tpot_ms worse by 163.93% at c=128" in ab["summary"]
    # the same trials, the same judge: every metric's call, change and basis, point by point
    (mine,), (theirs,) = guard["points"], diff["points"]
    assert (mine["concurrency"], mine["colour"], mine["why"]) == (
        theirs["concurrency"],
        theirs["colour"],
        theirs["why"],
    )
    calls = [(m["metric"], m["role"], m["status"], m["delta_pct"], m["noise"]["basis"]) for m in mine["metrics"]]
    assert calls == [
        (m["metric"], m["role"], m["status"], m["delta_pct"], m["noise"]["basis"]) for m in theirs["metrics"]
    ]
    assert ("median_tpot_ms", "guarded", "regressed") in {c[:3] for c in calls}
    # and the A/B's own focus call is the diff's focus call
    focus = next(m for m in theirs["metrics"] if m["role"] == "focus")
    (comparison,) = ab["verdict"]["comparisons"]
    assert (focus["metric"], focus["status"]) == (comparison["metric"], "within") and comparison["outcome"] == (
        "no_improvement"
    )
    assert focus["noise"]["p_value"] == pytest.approx(comparison["noise"]["p_value"])
    # the frontier records what the verdict says: before, "max_num_batched_tokens 2048 -> 8192: no_improvement (every
    # difference is inside the noise)" beside RED guards (issue 40)
    (tried,) = [t for f in frontier["frontiers"] for t in f["tried"] if t["lever"] == "max_num_batched_tokens"]
    assert tried["outcome"] == "regression" and "median_tpot_ms worse by 163.93%" in tried["why"]
