"""Open-loop workloads (issue 41, item 1): a workload benched at request rates, on the fake engine in a child process
through the real LocalTarget. The fake queues past FAKE_VLLM_RATE_KNEE requests/s (TTFT and TPOT x (rate / knee)^3,
so with a p99 TTFT of 435.8 ms at the knee, an SLA of 600 ms holds up to 4 x (600 / 435.8)^(1/3) = 4.45 req/s), and its
client sends no faster than FAKE_VLLM_CLIENT_MAX_RATE. Each rate is a load point of its own: its figures (the rate the
client sent, goodput against the SLA's per-request limits, the latency percentiles), its column in the table, its
series in the rate plots; the load boundary finds the highest rate whose SLA holds (through MCP), and a rate the client
could not send is flagged and not judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from redline.errors import RunFailed
from redline.ledger.campaign_file import read_verdict
from redline.ops.campaign.plan import campaign_plan
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.run import campaign_run
from redline.server.app import build_server
from tests.campaign.helpers import Fake, make_fake
from tests.server.helpers import call, write_env

pytestmark = pytest.mark.anyio
OPEN = {"input_len": 128, "output_len": 16, "num_prompts": 12}
SPEC = {
    "focus": "goodput",
    "sla": {"p99_ttft_ms": 600, "median_tpot_ms": 100},
    "concurrencies": [],
    "grid": {"max_num_batched_tokens": [8192]},
    "replicates": 0,
}


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path, FAKE_VLLM_RATE_KNEE="4")


async def test_a_rate_workload_is_benched_open_loop_at_each_rate_and_judged_on_its_goodput(fake: Fake) -> None:
    path = fake.write(**SPEC, workload={**OPEN, "rates": [2, 8], "burstiness": 0.5})
    plan = campaign_plan(path)
    (cell,) = plan.cells
    assert [(b.concurrency, b.rate, b.result_file) for b in cell.benches] == [
        (None, 2.0, "bench-r2.json"),
        (None, 8.0, "bench-r8.json"),
    ]
    command = cell.benches[0].command
    assert command[command.index("--request-rate") + 1] == "2" and "--max-concurrency" not in command
    assert command[command.index("--burstiness") + 1] == "0.5" and "--save-detailed" in command
    assert cell.serve.max_num_seqs is None  # no concurrency asked: the server's own cap is what is measured
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.verdict == "green", v and v.reason
    held, queued = v.results
    assert (held.rate, held.concurrency, held.sla_ok, queued.rate, queued.sla_ok) == (2.0, None, True, 8.0, False)
    assert held.metrics["sent_rate"].mean == pytest.approx(2.0)
    assert held.metrics["goodput_requests"].mean == pytest.approx(held.metrics["request_throughput"].mean)
    assert held.metrics["goodput_output_throughput"].mean == pytest.approx(held.metrics["output_throughput"].mean)
    assert queued.metrics["goodput_requests"].mean == 0  # at 8 req/s every request's TTFT is 8x over the limit
    assert queued.metrics["p99_ttft_ms"].mean == pytest.approx(435.8 * 8, rel=0.01)
    (trial,) = held.repeats
    said = {c.check: c for c in trial.checks}
    assert said["rate"].ok and said["rate"].said == "the client sent 2 req/s (2 asked)" and "client" not in said
    assert trial.figures is not None and trial.figures.goodput_slo == {"ttft_ms": 600, "tpot_ms": 100}
    ctx = v.context_at(held)
    assert (ctx.workload.rate, ctx.workload.concurrency, ctx.workload.burstiness) == (2.0, None, 0.5)
    report = campaign_report(path)
    assert report.table.rates == [2.0, 8.0] and report.table.concurrencies == []
    (row, _) = report.table.rows
    assert row.rate == 2.0 and row.sent_rate == pytest.approx(2.0) and row.goodput_output_throughput is not None
    assert {p.name for p in report.plots} >= {"goodput-rate", "ttft-rate"}
    (series,) = next(p for p in report.plots if p.name == "goodput-rate").series
    assert series.x == [2.0, 8.0] and series.y[1] == 0
    text = Path(report.report).read_text()
    assert "| 2 req/s | 8 req/s |" in text and "request rates 2, 8 req/s (open loop, gamma, burstiness 0.5" in text
    assert f"at {2:g} req/s" in text  # the cell's goodput score came from its 2 req/s point


async def test_the_load_boundary_by_rate_finds_the_knee_the_fake_puts_there_over_mcp(tmp_path: Path) -> None:
    """Through MCP as an agent runs it: campaign_run as a job, then champion_select (kept beside the test as
    champion.json) and campaign_report."""
    env = write_env(tmp_path / "srv", FAKE_VLLM_RATE_KNEE="4")
    fake = make_fake(env.workspace)  # its model and campaign file in the server's workspace, booted by its target
    fake.write(
        **SPEC,
        workload={**OPEN, "rates": [0.5]},
        boundary={"by": "rate", "lowest": 0.5, "highest": 64, "repeats": 1},
    )
    async with Client(build_server(env.config)) as client:
        job = await call(client, "campaign_run", campaign="campaigns/c1.yml", i_understand_this_submits_jobs=True)
        while not job["done"]:
            job = await call(client, "job_status", job_id=job["job_id"], wait_s=60)
        assert job["state"] == "succeeded", job
        champion = await call(client, "champion_select", campaign="campaigns/c1.yml")
        report = await call(client, "campaign_report", campaign="campaigns/c1.yml")
    (tmp_path / "champion.json").write_text(json.dumps(champion, indent=1))  # for the closing note
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.boundary is not None, v and v.reason
    b = v.boundary
    assert (b.by, b.finished, b.rate, b.concurrency, b.binding) == ("rate", True, 4.375, None, "p99_ttft_ms")
    assert "the SLA holds at 4.375 req/s and fails at 4.5 req/s: p99_ttft_ms binds" in b.why
    assert [r.rate for r in v.results] == [0.5, 1, 2, 4, 4.25, 4.375, 4.5, 5, 6, 8]
    ran = [c[c.index("--request-rate") + 1] for c in v.commands.bench]
    assert ran == ["0.5", "1", "2", "4", "8", "6", "5", "4.5", "4.25", "4.375"]  # in the probing's order
    (ranked,) = champion["ranked"]  # goodput: the best rate inside the SLA, the boundary's
    assert (ranked["cell"], ranked["at_rate"], ranked["outcome"]) == ("mnbt8192", 4.375, "baseline"), champion
    assert champion["scoring"].endswith("per host among the request rates inside the SLA"), champion["scoring"]
    text = Path(report["report"]).read_text()
    assert "4.375 req/s" in text and "## Load boundary" in text


async def test_a_rate_the_client_could_not_send_is_flagged_and_not_judged_and_the_boundary_stops_there(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fake.write(
        **SPEC,
        workload={**OPEN, "rates": [1]},
        boundary={"by": "rate", "lowest": 1, "highest": 64, "repeats": 1},
        continue_on_red=True,
    )
    async with fake.target(FAKE_VLLM_CLIENT_MAX_RATE="3", FAKE_VLLM_RATE_KNEE="100") as target:
        with pytest.raises(RunFailed, match="the bench client could not send the request rate asked: run it where"):
            await campaign_run(path, target, i_understand_this_submits_jobs=True)  # its one cell measured no boundary
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.boundary is not None
    assert [r.rate for r in v.results] == [1, 2, 4]
    four = v.results[-1]
    (check,) = [c for t in four.repeats for c in t.checks if c.check == "rate"]
    assert not check.ok and "the client sent 3 req/s of the 4 asked (75%, under 90%)" in check.said
    assert not four.ok and "not judged" in (four.reason or "")
    b = v.boundary
    assert (b.finished, b.rate) == (False, 2.0) and "not judged at 4 req/s" in b.why
    assert "the highest that held below it: 2 req/s" in b.why


async def test_focus_slo_goodput_ranks_each_cell_by_its_goodput_at_a_rate_and_a_breach_there_is_goodput_lost(
    fake: Fake,
) -> None:
    """Goodput at a rate as the focus: each request held to the SLA's limits (a rate past the knee breaches the p99
    TTFT, its goodput 0, and the cell stays green), the score the best goodput per GPU among the rates."""
    path = fake.write(**{**SPEC, "focus": "slo_goodput"}, workload={**OPEN, "rates": [2, 8]})
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.verdict == "green" and "per-request limits" in v.reason
    champion = campaign_report(path).champion
    (ranked,) = champion.ranked
    assert ranked.at_rate == 2.0 and ranked.score == pytest.approx(
        v.results[0].metrics["goodput_output_throughput"].mean
    )
    assert "goodput" in champion.scoring and champion.metric == "goodput_output_throughput_per_gpu"
