"""An A/B on traffic as it is served (issue 41, item 3): two arms on the fake engine (FAKE_VLLM_DECODE_MODEL=1, so
an arm's figures follow its config), benched on a rate workload (open loop at 2 req/s) and a trace workload (the
example's first 12 s at its own arrivals), 3 trials each; every trial point says its load point, each point of each
arm is judged alone, and a baseline recorded from one arm diffs the other point by point, rates and trace speedups
paired as concurrencies are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from redline.ledger.ab_file import AbPaths, read_trial
from redline.ops.ab.run import ab_run
from redline.ops.evidence.baseline import perf_baseline_diff, perf_baseline_record
from redline.ops.requests_evidence import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from tests.campaign.helpers import Fake, make_fake
from tests.rigor.helpers import ab_spec

pytestmark = pytest.mark.anyio
EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "traces" / "chat-sample.jsonl"
WORKLOADS = {
    "live": {"input_len": 128, "output_len": 16, "rates": [2], "num_prompts": 10},
    "chat": {"trace": "../traces/chat.jsonl", "window": {"end_s": 12}},
}


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1")


async def test_an_ab_at_a_rate_and_on_a_trace_judges_each_point_and_a_baseline_diffs_them(
    fake: Fake, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "traces").mkdir(parents=True)
    shutil.copy(EXAMPLE, ws / "traces" / "chat.jsonl")
    spec = ab_spec(fake, name="traffic", claim="throughput", workload=None, workloads=WORKLOADS, concurrencies=[])
    async with fake.target() as target:
        result = await ab_run(ws, spec, target, i_understand_this_submits_jobs=True)
    record = read_trial(AbPaths(ws, "traffic"), "large", 1)
    assert record is not None and record.ok, record and record.reason
    assert [(p.workload, p.concurrency, p.rate, p.speedup) for p in record.points] == [
        ("live", None, 2.0, None),
        ("chat", None, None, 1.0),
    ]
    chat = record.points[1]
    assert chat.context.workload.trace is not None and chat.context.workload.trace.startswith("../traces/chat.jsonl")
    assert chat.figures is not None and chat.figures.sent_rate is not None
    for arm in result.arms:
        assert arm.trials_ok == 3 and [(p.rate, p.speedup) for p in arm.points] == [(2.0, None), (None, 1.0)]
        assert "sent_rate" in arm.points[0].metrics and "sent_rate" in arm.points[1].metrics
    compared = {(c.workload, c.rate, c.speedup) for c in result.verdict.comparisons}
    assert compared == {("live", 2.0, None), ("chat", None, 1.0)}, result.verdict.comparisons
    recorded = perf_baseline_record(ws, PerfBaselineRecordRequest(name="small-traffic", ab="traffic", arm="small"))
    assert [(p.context.workload.rate, p.context.workload.speedup) for p in recorded.baseline.points] == [
        (2.0, None),
        (None, 1.0),
    ]
    diff = perf_baseline_diff(ws, PerfBaselineDiffRequest(baseline="small-traffic", ab="traffic", arm="large"))
    assert [(p.rate, p.speedup) for p in diff.points] == [(None, 1.0), (2.0, None)] and not diff.unmatched  # by name
    assert "2 req/s" in diff.text and "x1 arrivals" in diff.text
