"""A campaign's load boundary for real (focus goodput, `boundary:`): the fake engine in a child process through the
real LocalTarget, saturating past concurrency 24 (FAKE_VLLM_SATURATION: TTFT x (c / 24)^3 above it), so the
boundary of a p99 TTFT of 600 ms is known: 435.8 ms x (26/24)^3 = 554 holds, x (27/24)^3 = 621 does not. The cell
probes it on its one server after the listed concurrencies, and its verdict, table and plan say it."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.errors import InputError
from redline.ledger.campaign_file import read_verdict
from redline.models.campaign import Campaign
from redline.ops.campaign.plan import campaign_plan
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.results import campaign_aggregate
from redline.ops.campaign.run import campaign_run
from tests.campaign.helpers import Fake, make_fake, wait_until_gone

pytestmark = pytest.mark.anyio
PROBED = [1, 8, 16, 32, 24, 28, 26, 27]  # the listed two, doubling to the first failure, bisection to one apart


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path, FAKE_VLLM_SATURATION="24")


SPEC = {
    "focus": "goodput",
    "sla": {"p99_ttft_ms": 600},
    "concurrencies": [1, 8],
    "grid": {"max_num_batched_tokens": [8192]},
    "boundary": {"lowest": 1, "highest": 64, "replicates": 1},
    "replicates": 0,  # one cell: its boundary, not its noise
}


def goodput(fake: Fake, **changes: object) -> Path:
    return fake.write(**{**SPEC, **changes})


async def test_a_cell_finds_its_load_boundary_on_its_one_server_and_names_what_binds(fake: Fake) -> None:
    path = goodput(fake)
    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert result.boots == 1
    v = read_verdict(fake.campaigns / "c1", "mnbt8192")
    assert v is not None and v.verdict == "green" and v.boundary is not None
    b = v.boundary
    assert (b.finished, b.concurrency, b.binding, b.cliff, b.probes) == (True, 26, "p99_ttft_ms", False, len(PROBED))
    assert "the SLA holds at 26 and fails at 27: p99_ttft_ms binds" in b.why and "load boundary:" in v.reason
    assert [r.concurrency for r in v.results] == sorted(PROBED)  # every probe is a result of its own
    assert [r.concurrency for r in v.results if r.sla_ok] == [1, 8, 16, 24, 26]
    ran = [c[c.index("--max-concurrency") + 1] for c in v.commands.bench]
    assert ran == [str(c) for c in PROBED]  # in the order the probing chose them, one server
    assert v.context.serve.max_num_seqs == 64  # raised to the highest a probe may ask, not the listed 8
    table = campaign_aggregate(path)  # a column per concurrency benched, the probed ones included
    assert table.concurrencies == sorted(PROBED)
    assert [r.concurrency for r in table.rows if not r.sla_ok] == [27, 28, 32]
    report = Path(campaign_report(path).report).read_text()
    assert "## Load boundary (measured, one server per cell)" in report
    assert "- **mnbt8192**: concurrency 26: the SLA holds at 26 and fails at 27" in report
    assert wait_until_gone(fake.root) == []


async def test_the_plan_says_what_it_cannot_list_and_the_spec_is_checked(fake: Fake) -> None:
    plan = campaign_plan(goodput(fake), target=fake.target())
    assert plan.benches == 2  # the listed ones; the probes are chosen as the cell runs
    said = next(g for g in plan.gates if "load boundary" in g)
    assert "p99_ttft_ms <= 600" in said and "from concurrency 1 doubling up to 64" in said
    spec = Campaign.model_validate(fake.spec(**SPEC)).boundary
    assert spec is not None and f"up to {spec.most_benches} more benches per cell" in said
    for bad, words in (
        ({"focus": "throughput"}, "boundary: probing for the load boundary needs focus goodput and a latency SLA"),
        ({"boundary": {"lowest": 64, "highest": 8}}, "lowest 64 must be under highest 8"),
    ):
        with pytest.raises(InputError, match=words):
            campaign_plan(goodput(fake, **bad), target=fake.target())
