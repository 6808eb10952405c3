"""An A/B's plan predicts each arm's KV cache on the target's GPU before any boot (as a campaign's cells), and each
trial's boot is judged against its arm's band: on the in-memory H200 target (every boot is the real llama8b log
l8b_32k.log, 896,912 KV tokens), the arm of that log's config boots inside its band; an arm planned at half the
memory utilisation is predicted about half the cache, and its trial, booting the whole one, is named drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.ledger.ab_file import AbPaths, read_trial
from redline.ops.ab.run import ab_run
from tests.campaign.helpers import Fake, make_fake
from tests.rigor.helpers import ab_spec
from tests.targets.memory_target import MemoryTarget

pytestmark = pytest.mark.anyio
BOOTED = 896_912  # the KV tokens of l8b_32k.log, every boot of the in-memory target


def spec(fake: Fake, half: float = 0.45):  # type: ignore[no-untyped-def]
    serve = {"model": str(fake.model), "max_model_len": 32768, "max_num_batched_tokens": 8192, "port": fake.port}
    arms = [{"name": "whole", "serve": serve}, {"name": "half", "serve": serve | {"gpu_memory_utilization": half}}]
    return ab_spec(fake, arms=arms, baseline="whole", concurrencies=[4], trials=1)


async def test_each_arm_is_predicted_before_it_boots_and_a_boot_off_its_band_is_drift(tmp_path: Path) -> None:
    fake = make_fake(tmp_path)
    async with MemoryTarget() as target:
        dry = await ab_run(tmp_path / "ws", spec(fake), target, i_understand_this_submits_jobs=False, dry_run=True)
    assert dry.plan is not None
    predicted = {a.name: a.predicted for a in dry.plan.arms}
    whole, half = predicted["whole"], predicted["half"]
    assert whole is not None and half is not None and whole.provenance == half.provenance == "predicted"
    assert abs(whole.kv_cache_tokens - BOOTED) / BOOTED < 0.01 and whole.feasible == half.feasible == "yes"
    assert 0.3 < half.kv_cache_tokens / whole.kv_cache_tokens < 0.5  # 0.45 x 139.8 GiB less the weights

    async with MemoryTarget() as target:
        await ab_run(tmp_path / "ws", spec(fake), target, i_understand_this_submits_jobs=True)
    paths = AbPaths(tmp_path / "ws", "mnbt")
    on_band, off_band = read_trial(paths, "whole", 1), read_trial(paths, "half", 1)
    assert on_band is not None and off_band is not None
    assert on_band.drift is None
    assert off_band.drift is not None and f"{BOOTED:,} KV tokens booted" in off_band.drift
    assert f"{half.kv_cache_tokens:,} predicted" in off_band.drift


async def test_an_arm_whose_cache_cannot_hold_one_request_is_named_in_the_plan_s_gates(tmp_path: Path) -> None:
    """At 12% of the H200 the cache left beside llama8b's 15 GiB of weights holds about 12k tokens, under one request
    of max_model_len 32,768: the plan says so before any boot, and still plans the arm (the person may run it)."""
    fake = make_fake(tmp_path)
    async with MemoryTarget() as target:
        dry = await ab_run(
            tmp_path / "ws", spec(fake, 0.12), target, i_understand_this_submits_jobs=False, dry_run=True
        )
    assert dry.plan is not None and [a.name for a in dry.plan.arms] == ["whole", "half"]
    half = dry.plan.arms[1].predicted
    assert half is not None and half.feasible == "no" and half.kv_cache_tokens_high < 32768
    assert any(g.startswith("predicted infeasible") and "half (" in g for g in dry.plan.gates), dry.plan.gates
    assert not any("whole (" in g for g in dry.plan.gates)
