"""The vLLM memory model on a second GPU (issue 34, item 4): real vLLM 0.26.0 boots on one H100 80GB
(src/redline/data/boots/vllm-0.26.0-h100), predicted first from the H200's boots alone, as a user on a GPU redline
has never seen would get them, then with the H100's own boots in the calibration. The GPU's terms come from
nvidia-smi and its boots, never from a table of names; the V1 runner's CUDA graph estimate (item 5) is read from its
log and taken from the budget. Pure: no process starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.engines.vllm.memory_terms import identity_residual
from redline.models.memory import MemoryPrediction, Observation
from redline.ops.predict.corpus import corpus_observations

H100 = list(corpus_observations("vllm-0.26.0-h100"))
H200 = list(corpus_observations("vllm-0.26.0-h200"))
VLLM = get_engine("vllm").memory_model()
# A boot whose log prints vLLM's own CUDA graph estimate (the V1 runner with graphs on: Qwen3-30B-A3B).
ESTIMATE = "boots/vllm-0.26.0-h100/qwen3-30b-a3b_graphs_mnbt8192.log"


def predict(o: Observation, training: list[Observation]) -> MemoryPrediction:
    cal = VLLM.calibrate(training, gpu=o.gpu)
    return VLLM.predict(
        o.shape,
        o.serve,
        o.gpu,
        cal,
        model=o.architecture,
        architecture=o.architecture,
        version=None,
        compile_cache=o.signals.compile_cache,
    )


def off(o: Observation, p: MemoryPrediction) -> float:
    real = o.signals.kv_cache_tokens
    assert real is not None
    return abs(p.kv_cache_tokens - real) / real


@pytest.mark.parametrize("boot", H100, ids=lambda o: Path(o.source).name)
def test_an_h100_boot_is_within_2pct_from_the_h200_s_boots_alone(boot: Observation) -> None:
    found = predict(boot, H200)
    assert off(boot, found) < 0.02, (found.kv_cache_tokens, found.basis)
    assert found.kv_cache_tokens_low <= (boot.signals.kv_cache_tokens or 0) <= found.kv_cache_tokens_high
    assert "nvidia-smi's reserved" in found.basis  # no H100 boot: the driver's reserve is what nvidia-smi says


@pytest.mark.parametrize("boot", H100, ids=lambda o: Path(o.source).name)
def test_an_h100_boot_is_within_1pct_once_the_h100_s_own_boots_calibrate(boot: Observation) -> None:
    found = predict(boot, [o for o in H200 + H100 if o.source != boot.source])
    assert off(boot, found) < 0.01, (found.kv_cache_tokens, found.basis)
    assert found.kv_cache_tokens_low <= (boot.signals.kv_cache_tokens or 0) <= found.kv_cache_tokens_high
    assert "nvidia-smi's reserved" not in found.basis  # the H100's own boots say its reserve


def test_a_gpu_no_boot_ran_on_is_nvidia_smi_s_total_less_what_it_reserves() -> None:
    """nvidia-smi on the H100: 81,559 MiB total, 480 MiB reserved; torch (and vLLM's log) saw 79.18 GiB."""
    boot = H100[0]
    assert boot.gpu is not None and boot.gpu.reserved_gib == 0.47
    total = predict(boot, H200).terms.device_total_gib
    assert total == pytest.approx(boot.signals.memory.device_total_gib, abs=0.06)  # 79.6 GiB is written to a tenth
    unsaid = boot.gpu.model_copy(update={"reserved_gib": None})  # without it: the other GPUs' share of their totals
    cal = VLLM.calibrate(H200, gpu=unsaid)
    assert "share of their totals" in cal.terms["reserve_gib"].basis


def test_the_v1_runner_takes_its_graph_estimate_from_the_budget_and_the_log_says_it() -> None:
    """vLLM 0.26.0's V1 runner (Qwen3-MoE) with graphs on estimates its graphs before the KV cache is sized and
    subtracts the estimate (gpu_worker.py): 72.84 - 56.93 - 2.68 - 0.24 - 0.64 = 12.35 GiB, the log's 12.36. Its
    `--kv-cache-memory=` suggestion (12.06 GiB, vllm#57936 on graph memory) is read by nothing."""
    boot = next(o for o in H100 if o.source == ESTIMATE)
    assert boot.signals.memory.cudagraph_estimate_gib == 0.64 and boot.signals.memory.cudagraph_gib == 0.8
    assert boot.signals.available_kv_cache_gib == 12.36 and abs(identity_residual(boot)) < 0.02
    found = predict(boot, [o for o in H200 + H100 if o.source != boot.source])
    assert found.terms.cuda_graph_budget_gib and found.terms.cuda_graph_budget_gib > 0.5
    v2 = next(o for o in H100 if o.architecture == "llama8b" and not o.serve.enforce_eager)
    assert predict(v2, H200 + H100).terms.cuda_graph_budget_gib == 0  # the V2 runner captures after sizing


# The boots gathered on 2026-12-06 (the MoE and dense graphs boots at other sizes, on both GPUs): each predicted
# from every boot recorded before them.
LATER = {
    "boots/vllm-0.26.0-h100/" + name
    for name in (
        "qwen3-30b-a3b_graphs_mnbt4096.log",
        "qwen3-30b-a3b_graphs_mnbt16384.log",
        "qwen1.5-moe-a2.7b_graphs_mnbt8192.log",
        "qwen3-30b-a3b_graphs_mnbt8192_seqs128.log",
        "l8b_graphs_mnbt16384_seqs128.log",
    )
} | {
    "boots/vllm-0.26.0-h200/qwen3-30b-a3b_graphs_mnbt8192.log",
    "boots/vllm-0.26.0-h200/qwen3-30b-a3b_graphs_mnbt8192_seqs128.log",
}


@pytest.mark.parametrize("boot", [o for o in H100 + H200 if o.source in LATER], ids=lambda o: o.source.split("/", 1)[1])
def test_a_later_boot_is_within_1pct_from_the_boots_before_it(boot: Observation) -> None:
    found = predict(boot, [o for o in H100 + H200 if o.source not in LATER])
    assert off(boot, found) < 0.01, (found.kv_cache_tokens, found.basis)
    assert found.kv_cache_tokens_low <= (boot.signals.kv_cache_tokens or 0) <= found.kv_cache_tokens_high


def test_the_v1_runner_s_sampling_is_measured_between_boots_that_differ_in_requests_alone() -> None:
    """Qwen3-30B-A3B (V1 runner) at 1,024 and 128 requests, all else equal: 2.68 and 0.89 GiB at the profile's peak,
    1.79 GiB for 896 x 151,936 logits, 14.1 bytes a logit, the same on both GPUs; with no such pair, the prior:
    vLLM's sort of the fp32 logits, 12 bytes."""
    for gpu in (H100, H200):
        pair = [o for o in gpu if o.architecture == "qwen3-30b-a3b" and o.serve.max_num_batched_tokens == 8192]
        pair = [o for o in pair if not o.serve.enforce_eager]
        assert sorted(o.serve.max_num_seqs or 1024 for o in pair) == [128, 1024]
        fit = VLLM.calibrate(pair).terms["v1_sampler_bytes"]
        assert fit.coefficients["bytes_per_logit"] == pytest.approx(14.1, abs=0.1) and fit.boots == 1
    alone = VLLM.calibrate([o for o in H200 if not o.serve.max_num_seqs or o.architecture != "qwen3-30b-a3b"])
    assert alone.terms["v1_sampler_bytes"].coefficients["bytes_per_logit"] == 12
    assert alone.terms["v1_sampler_bytes"].basis.startswith("prior: vLLM's sort")
