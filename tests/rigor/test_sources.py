"""Results named by where they live: an A/B arm taken from a campaign's cell, and a campaign cell recorded as a
baseline and diffed against another cell (ops/evidence/sources.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.errors import InputError
from redline.models.ab import AbSpec
from redline.ops.ab.run import ab_run
from redline.ops.campaign.run import campaign_run
from redline.ops.evidence.baseline import perf_baseline_diff, perf_baseline_record
from redline.ops.requests_evidence import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from tests.campaign.helpers import make_fake

pytestmark = pytest.mark.anyio


async def test_campaign_cells_as_arms_and_as_a_baseline(tmp_path: Path) -> None:
    fake = make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1")
    path = fake.write()  # tmp_path/campaigns/c1.yml: cells mnbt2048 and mnbt8192 at concurrencies 1 and 4
    spec = AbSpec.model_validate(
        {
            "name": "cells",
            "target": "local",
            "baseline": "a",
            "workload": {"input_len": 128, "output_len": 16},
            "concurrencies": [1, 4],
            "arms": [
                {"name": "a", "campaign": "campaigns/c1.yml", "cell": "mnbt2048"},
                {"name": "b", "campaign": "campaigns/c1.yml", "cell": "mnbt8192"},
            ],
        }
    )
    async with fake.target() as target:
        plan = (await ab_run(tmp_path, spec, target, i_understand_this_submits_jobs=False, dry_run=True)).plan
        assert plan is not None
        assert [a.serve.max_num_batched_tokens for a in plan.arms] == [2048, 8192]
        assert all(a.serve.port == fake.port and a.serve.max_num_seqs == 4 for a in plan.arms)  # the campaign's gates
        wrong = spec.model_copy(update={"arms": [spec.arms[0], spec.arms[1].model_copy(update={"cell": "nosuch"})]})
        with pytest.raises(InputError, match="has no cell 'nosuch'; its cells are mnbt2048, mnbt8192"):
            await ab_run(tmp_path, wrong, target, i_understand_this_submits_jobs=False, dry_run=True)
        outside = spec.model_copy(
            update={"arms": [spec.arms[0].model_copy(update={"campaign": "../c1.yml"})] + spec.arms[1:]}
        )
        with pytest.raises(InputError, match="must be a path inside the workspace"):
            await ab_run(tmp_path, outside, target, i_understand_this_submits_jobs=False, dry_run=True)
        await campaign_run(path, target, i_understand_this_submits_jobs=True)

    made = perf_baseline_record(
        tmp_path, PerfBaselineRecordRequest(name="c1-small", campaign="campaigns/c1.yml", cell="mnbt2048")
    )
    assert made.baseline.source.kind == "campaign_cell" and made.baseline.source.item == "mnbt2048"
    points = made.baseline.points
    assert [p.context.workload.concurrency for p in points] == [1, 4] and points[0].context.node is not None
    assert points[0].context.model.config_hash is not None  # the model folder is readable here
    diff = perf_baseline_diff(
        tmp_path,
        PerfBaselineDiffRequest(
            baseline="c1-small", campaign="campaigns/c1.yml", cell="mnbt8192", focus="median_tpot_ms"
        ),
    )
    assert diff.colour == "GREEN", diff.text
    with pytest.raises(InputError, match="cell 'nosuch' has no verdict"):
        perf_baseline_record(tmp_path, PerfBaselineRecordRequest(name="x", campaign="campaigns/c1.yml", cell="nosuch"))
    with pytest.raises(InputError, match="name one result"):
        perf_baseline_record(tmp_path, PerfBaselineRecordRequest(name="x", campaign="campaigns/c1.yml", ab="cells"))
