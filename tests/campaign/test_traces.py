"""Trace workloads (issue 41, item 2): a campaign whose workload replays a trace file, on the fake engine in a child
process through the real LocalTarget. The trace (the shipped example, copied into the workspace) is read through the
one path checker and the one reader of caller-named files, its window taken; each bench sends every row of it, fresh
prompts of its lengths (hash ids no earlier bench used), at its own arrivals sped up, or at a rate; the rate its
arrivals ask is what the client is checked against; its figures, table and report name the trace; a trace with a
hostile row, or outside the workspace, is refused before anything boots, the row named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from redline.errors import InputError
from redline.ledger.campaign_file import read_verdict
from redline.ops.campaign.plan import campaign_plan, load_campaign
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.run import campaign_run
from tests.campaign.helpers import Fake, make_fake

pytestmark = pytest.mark.anyio
EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "traces" / "chat-sample.jsonl"
SPEC = {
    "focus": "goodput",
    "sla": {"p99_ttft_ms": 600},
    "concurrencies": [],
    "grid": {"max_num_batched_tokens": [8192]},
    "replicates": 0,
}
WINDOW = {"start_s": 0, "end_s": 20}  # the example's first 20 s


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    found = make_fake(tmp_path)
    (found.root / "traces").mkdir()
    shutil.copy(EXAMPLE, found.root / "traces" / "chat.jsonl")
    return found


def _trace(**changes: object) -> dict[str, object]:
    return {"trace": "../traces/chat.jsonl", "window": WINDOW, **changes}


async def test_a_trace_workload_replays_its_window_at_its_arrivals_and_at_a_rate_and_is_judged(fake: Fake) -> None:
    path = fake.write(**SPEC, workload=_trace(speedups=[1, 4], rates=[2]), warmup_requests=2)
    loaded = load_campaign(path)
    trace = loaded.campaign.shape(None).replayed
    rows = len(trace.rows)
    own = trace.own_rate
    assert 40 <= rows <= 120 and own is not None
    (cell,) = campaign_plan(path).cells
    assert [(b.rate, b.speedup, b.num_prompts, b.result_file) for b in cell.benches] == [
        (2.0, None, rows, "bench-r2.json"),
        (None, 1.0, rows, "bench-x1.json"),
        (None, 4.0, rows, "bench-x4.json"),
    ]
    x1 = cell.benches[1].command
    assert x1[x1.index("--dataset-name") + 1] == "timed_trace" and "--no-self-timed" not in x1
    assert x1[x1.index("--dataset-path") + 1].endswith("/bench-x1.trace.jsonl") and "--save-detailed" in x1
    r2 = cell.benches[0].command
    assert "--no-self-timed" in r2 and r2[r2.index("--request-rate") + 1] == "2"
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.verdict == "green", v and v.reason
    assert [(r.rate, r.speedup) for r in v.results] == [(2.0, None), (None, 1.0), (None, 4.0)]
    at_x1, at_x4 = v.results[1], v.results[2]
    sent = {t.result_file: {c.check: c for c in t.checks}["rate"] for r in v.results for t in r.repeats}
    assert sent["bench-x1.json"].ok and f"({own:g} asked)" in sent["bench-x1.json"].said
    assert at_x4.metrics["sent_rate"].mean == pytest.approx(4 * own, rel=1e-6)  # its arrivals four times closer
    (trial,) = at_x1.repeats
    assert trial.figures is not None and trial.figures.completed == rows
    assert trial.figures.total_output_tokens == sum(r.output_len for r in trace.rows)  # every row's own output
    ctx = v.context_at(at_x4).workload
    assert (ctx.dataset, ctx.speedup, ctx.num_prompts) == ("trace", 4.0, rows)
    assert ctx.trace is not None and ctx.trace.startswith("../traces/chat.jsonl sha256:")
    sent_file = [json.loads(line) for line in _run_file(fake, "bench-x4.trace.jsonl").read_text().splitlines()]
    assert [(r["input_length"], r["output_length"]) for r in sent_file] == [
        (r.input_len, r.output_len) for r in trace.rows
    ]
    first = float(trace.rows[0].arrival_s or 0)
    assert sent_file[-1]["timestamp"] == pytest.approx((float(trace.rows[-1].arrival_s or 0) - first) / 4, abs=1e-5)
    ids_x1 = {
        i
        for r in json.loads(f"[{','.join(_run_file(fake, 'bench-x1.trace.jsonl').read_text().split())}]")
        for i in r["hash_ids"]
    }
    assert not ids_x1 & {i for r in sent_file for i in r["hash_ids"]}  # each bench its own fresh prompts
    report = campaign_report(path)
    assert report.table.speedups == [1.0, 4.0] and report.table.rates == [2.0]
    text = Path(report.report).read_text()
    assert "| 2 req/s | x1 arrivals | x4 arrivals |" in text and "trace ../traces/chat.jsonl sha256:" in text
    assert report.champion.scoring.endswith("among the load points inside the SLA")  # a rate and two speedups


def _run_file(fake: Fake, name: str) -> Path:
    """A file a bench left in its server's run folder on the (local) target."""
    (found,) = (fake.root / "target").rglob(name)
    return found


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"input_len": 12, "output_len": 0, "arrival_s": 99}', "line 241: output_len is 0, not from 1 to"),
        ('{"input_len": "12; rm -rf /", "output_len": 4}', "line 241: input_len is '12; rm -rf /', not a whole number"),
        ('{"input_len": 12, "output_len": 4, "arrival_s": 1}', "line 241: it arrived before the row above it"),
    ],
)
async def test_a_trace_with_a_hostile_row_is_refused_before_anything_boots_naming_the_row(
    fake: Fake, line: str, said: str
) -> None:
    hostile = fake.root / "traces" / "chat.jsonl"
    hostile.write_text(hostile.read_text() + line + "\n")
    path = fake.write(**SPEC, workload=_trace())
    with pytest.raises(InputError, match="workload.trace ../traces/chat.jsonl") as refused:
        campaign_plan(path)
    assert said in str(refused.value)


async def test_a_trace_outside_the_workspace_or_a_load_it_cannot_give_is_refused(fake: Fake, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="workload.trace '../../etc/passwd' must be a path inside the workspace"):
        campaign_plan(fake.write(**SPEC, workload={"trace": "../../etc/passwd"}))
    (fake.root / "traces" / "lengths.jsonl").write_text('{"input_len": 10, "output_len": 4}\n' * 12)
    with pytest.raises(InputError, match="the trace has no arrival times to replay: give the workload rates"):
        campaign_plan(fake.write(**SPEC, workload={"trace": "../traces/lengths.jsonl"}))
    with pytest.raises(InputError, match="the window holds no row of the trace"):
        campaign_plan(fake.write(**SPEC, workload=_trace(window={"start_s": 5000})))
    with pytest.raises(InputError, match="workload: input_len: a trace workload takes its requests. lengths"):
        campaign_plan(fake.write(**SPEC, workload=_trace(input_len=12)))
