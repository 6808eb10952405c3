"""One context model for every measured number: a campaign cell's verdict carries the same ContextDescriptor an A/B
trial's point does (built by ops/evidence/context.descriptor), reached per concurrency; verdict files written before
it (the real H200 campaign in tests/data) still read, with every fact they recorded and nothing invented."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.ledger.ab_file import AbPaths, read_trial
from redline.ledger.campaign_file import read_verdict
from redline.models.context import ContextDescriptor, differing_fields
from redline.ops.ab.run import ab_run
from redline.ops.campaign.outcome import time_taken
from redline.ops.campaign.run import campaign_run
from tests.campaign.helpers import Fake, make_fake, verdict
from tests.conftest import DATA
from tests.rigor.helpers import ab_spec
from tests.targets.memory_target import MemoryTarget

H200 = DATA / "vllm-0.26.0-sglang-0.5.17-h200-campaign"


@pytest.mark.parametrize("cell", ["vllm", "sglang"])
def test_a_verdict_written_before_the_one_context_model_reads_with_every_fact_it_recorded(cell: str) -> None:
    results = H200 / "llama8b-h200-engines"
    raw = YAML(typ="safe").load((results / "cells" / cell / "verdict.yml").read_text())["context"]
    verdict = read_verdict(results, cell)
    assert verdict is not None and isinstance(verdict.context, ContextDescriptor)
    ctx = verdict.context
    assert (ctx.engine.name, ctx.engine.version) == (raw["engine"], raw["engine_version"])
    assert ctx.bench is not None and (ctx.bench.client, ctx.bench.backend) == (
        raw["bench_client"],
        raw["bench_backend"],
    )
    assert (ctx.hardware.gpu_name, ctx.hardware.gpu_count) == (raw["gpu"]["name"], raw["gpu"]["count"])
    assert ctx.model.name == raw["model"] and ctx.model.config_hash is None  # not recorded then: not invented now
    assert ctx.regime.compile_cache is None  # nor the torch.compile cache its boot found
    assert ctx.regime.label == f"{raw['regime']['cache']}/{raw['regime']['graphs']}" and ctx.trials == raw["trials"]
    assert ctx.node is not None and ctx.node.hostname == raw["host"] and ctx.warmup_requests == raw["warmup_requests"]
    at = verdict.context_at(verdict.results[-1])
    assert (at.workload.concurrency, at.workload.num_prompts) == (64, verdict.results[-1].num_prompts)
    assert ctx.workload.concurrency is None  # the cell's own context names no one concurrency


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


@pytest.mark.anyio
async def test_a_campaign_cell_and_an_ab_trial_of_one_config_carry_the_same_context(fake: Fake, tmp_path: Path) -> None:
    path = fake.write(
        concurrencies=[4],
        grid={"max_num_batched_tokens": [2048]},
        base={"max_model_len": 4096, "port": fake.port, "max_num_seqs": 4},
    )
    async with MemoryTarget() as target:  # routing and recording: no process adds to what is tested
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    verdict = read_verdict(fake.campaigns / "c1", "mnbt2048")
    assert verdict is not None and verdict.results and verdict.results[0].ok, verdict and verdict.reason
    cell = verdict.context_at(verdict.results[0])

    serve = {"model": str(fake.model), "max_model_len": 4096, "port": fake.port, "max_num_seqs": 4}
    arms = [{"name": "a", "serve": serve | {"max_num_batched_tokens": 2048}}, {"name": "b", "serve": serve}]
    spec = ab_spec(fake, arms=arms, baseline="a", concurrencies=[4], trials=1)
    async with MemoryTarget() as target:
        result = await ab_run(tmp_path / "ws", spec, target, i_understand_this_submits_jobs=True)
    point = next(a for a in result.arms if a.arm == "a").points[0]
    assert differing_fields(cell, point.context) == []
    assert cell.model == point.context.model and cell.model.config_hash is not None
    assert cell.node == point.context.node and cell.engine == point.context.engine
    # the boot log (l8b_32k.log) compiled: the cell, its boot and the trial each say its torch.compile cache was cold
    assert cell.regime.compile_cache == point.context.regime.compile_cache == "cold"
    assert verdict.boot.signals.compile_cache == "cold"
    trial = read_trial(AbPaths(tmp_path / "ws", spec.name), "a", 1)
    assert trial is not None and trial.compile_cache == "cold"


def test_gpu_time_is_counted_from_the_gpus_a_cell_used_and_a_cpu_host_gets_no_gpu_words() -> None:
    h200 = read_verdict(H200 / "llama8b-h200-engines", "vllm")
    assert h200 is not None and h200.context.hardware.gpu_count == 1
    gpu_s, text = time_taken([h200, h200], 400.0, 1)
    assert gpu_s == pytest.approx(2 * h200.wall_s) and f"{gpu_s:.0f} GPU-seconds" in text
    cpu = verdict("mnbt2048", {1: 40.0})  # built on a host that showed no GPU
    assert time_taken([cpu], 10.0, 2) == (0, "10s of wall time, up to 2 cells at once, no GPU on this host")
