"""The terms of vLLM's KV budget as a config sets them, before any fit: the weights' formula, the profile run's
size, KV bytes per token, what a boot's log says the identity left, and the shape of the profile's peak.

    KV GiB = utilisation x device total - weights - peak activation - non-torch [- CUDA graph estimate]

The bracket is the V1 model runner's with graphs on (runner.graphs_in_budget): it estimates its graphs and takes them
from the budget; the V2 runner captures them after the cache is sized. The peak activation is the larger of the
forward pass's (a fitted line in batched tokens x the MLP's bytes per token) and, on the V2 runner, what its sampling
holds after the forward pass (runner.v2_sampler_gib, from vLLM's code); the V1 runner's sampling adds to the line
(runner.v1_sampler_gib).

The profile run is where a graph-mode boot compiles, so its peak depends on the torch.compile cache the boot finds
(its compile state): a line per model class and state, eager (compiled nothing), cold (compiled) and warm (loaded
what an earlier boot compiled). A cold compile also holds memory of its own, which sets the peak where the forward
pass holds less: its spike, the model's embedding once and about two batches of its hidden states (llama8b: 1.01 GiB
cold at 2,048 batched tokens against 0.24 eager, 1.10 at 8,192 against 0.88; its embedding is 0.98 GiB, a batch of
its hidden states 16 or 64 MiB; at 16,384 the forward pass sets both, 1.78 and 1.72). Issue 42's Mistral-Nemo-12B
shape, cold at 2,048: 1.29 GiB, its embedding 1.25.
"""

from __future__ import annotations

import re

from redline.engines.memory_fit import at
from redline.engines.vllm.runner import DEFAULT_SEQS, graphs_in_budget, mnbt_of, v1_sampler_gib, v2_sampler_gib
from redline.errors import InputError
from redline.models.boot import CompileCache
from redline.models.memory import GIB, Fit, Observation
from redline.models.serve import ServeConfig, is_eager
from redline.models.shape import ModelShape, kv_bytes_per_token, mlp_activation_bytes, rope_cache_bytes, weight_bytes

MAX_CAPTURE = 512  # the largest batch vLLM captures a CUDA graph for by default
KV_BYTES_FLAG = re.compile(r"^--kv-cache-memory(?:-bytes)?=(\d+)$")
# A line per class (dense, MoE) and compile state: eager (nothing compiled), cold, warm.
STATES = ("eager", "cold", "warm")
KEYS = tuple(f"activation_{moe}{state}" for moe in ("", "moe_") for state in STATES)
SPIKE = "compile_spike"  # a cold compile's own peak: the embedding, and this many batches of hidden states


def graph_mode(serve: ServeConfig) -> str:
    return "eager" if is_eager(serve) else "graphs"


def capture(serve: ServeConfig) -> int:
    return min(serve.max_num_seqs or DEFAULT_SEQS, MAX_CAPTURE)


def weights_formula_gib(shape: ModelShape, serve: ServeConfig) -> float:
    """Parameters at their bytes plus the rope table, on one GPU of the tensor-parallel group."""
    quant = next((f.split("=", 1)[1] for f in serve.extra_flags if f.startswith("--quantization=")), None)
    total = weight_bytes(shape, quant)
    if total is None:
        raise InputError(f"extra_flags: quantization {quant!r} is not one redline sizes; predict without it")
    return (total / serve.tensor_parallel_size + rope_cache_bytes(shape)) / GIB


def activation_x(shape: ModelShape, serve: ServeConfig) -> float:
    """The profile run's size: batched tokens x what one holds at the MLP's peak, in GiB."""
    return mnbt_of(serve) * mlp_activation_bytes(shape) / serve.tensor_parallel_size / GIB


def observed_state(o: Observation) -> CompileCache | None:
    """The compile state a recorded boot was in: unused for an eager config or a log that says so, else what its log
    says (cold, warm), None where a graph-mode boot's record does not say (written before redline read it)."""
    return "unused" if is_eager(o.serve) else o.signals.compile_cache


def asked_state(serve: ServeConfig, asked: CompileCache | None) -> CompileCache:
    """The compile state a prediction is for: unused for an eager config (it compiles nothing), else the state asked
    for, cold where none is (a fresh deployment's)."""
    if is_eager(serve) or asked == "unused":
        return "unused"
    return asked or "cold"


def activation_key(shape: ModelShape, serve: ServeConfig, state: CompileCache) -> str:
    """The activation line a config is on: its model's class (dense or MoE) and its compile state (eager where the
    boot compiles nothing)."""
    return f"activation_{'moe_' if shape.is_moe else ''}{'eager' if state == 'unused' else state}"


def embedding_gib(shape: ModelShape, serve: ServeConfig) -> float:
    """The model's token embedding on one GPU (vocabulary-parallel), in GiB: what a cold compile's spike holds once."""
    return shape.vocab * shape.hidden * shape.dtype_bytes / serve.tensor_parallel_size / GIB


def hidden_batch_gib(shape: ModelShape, serve: ServeConfig) -> float:
    """One batch of hidden states (batched tokens x hidden x the dtype's bytes) on one GPU, in GiB."""
    return mnbt_of(serve) * shape.hidden * shape.dtype_bytes / serve.tensor_parallel_size / GIB


def spike_gib(spike: Fit, shape: ModelShape, serve: ServeConfig) -> float:
    """A cold compile's own peak: the embedding once, and the fitted number of batches of hidden states."""
    return embedding_gib(shape, serve) + spike.coefficients[SPIKE] * hidden_batch_gib(shape, serve)


def forward_bound(shape: ModelShape, serve: ServeConfig) -> bool:
    """Whether the forward pass, not the V2 runner's sampling, sets the profile's peak (batched tokens' bytes at least
    the sampling's): only such boots place the forward's line."""
    return activation_x(shape, serve) >= v2_sampler_gib(shape, serve)


def peak_activation(fit: Fit, shape: ModelShape, serve: ServeConfig, bytes_per_logit: float) -> float:
    """The profile run's peak on a fitted line: the forward's, or the V2 sampling's above the line's own intercept
    (what the profile holds besides), whichever is larger; plus the V1 runner's sampling at its bytes a logit."""
    sampling = fit.coefficients["intercept"] + v2_sampler_gib(shape, serve)
    return max(at(fit, activation_x(shape, serve)), sampling) + v1_sampler_gib(shape, serve, bytes_per_logit)


def state_peak(terms: dict[str, Fit], shape: ModelShape, serve: ServeConfig, state: CompileCache) -> tuple[float, bool]:
    """The profile run's peak in a compile state, and whether a cold compile's own spike sets it: the state's line
    (peak_activation), or, cold, the spike where it is larger."""
    per_logit = terms["v1_sampler_bytes"].coefficients["bytes_per_logit"]
    value = peak_activation(terms[activation_key(shape, serve, state)], shape, serve, per_logit)
    spike = spike_gib(terms[SPIKE], shape, serve) if state == "cold" else 0.0
    return (spike, True) if spike > value else (value, False)


def kv_per_token(shape: ModelShape, serve: ServeConfig) -> int:
    """K and V bytes of one token on one GPU: KV heads are split over tensor parallelism (at least one each)."""
    total = kv_bytes_per_token(shape, serve.kv_cache_dtype)
    if total is None:
        raise InputError(f"kv_cache_dtype: {serve.kv_cache_dtype!r} is not one redline sizes (auto, fp8, bfloat16)")
    heads_here = max(1, shape.kv_heads // serve.tensor_parallel_size)
    return total // shape.kv_heads * heads_here


def kv_bytes_given(serve: ServeConfig) -> int | None:
    """A KV cache sized by the config itself (--kv-cache-memory-bytes, or the CPU build's VLLM_CPU_KVCACHE_SPACE)."""
    for flag in serve.extra_flags:
        if m := KV_BYTES_FLAG.match(flag):
            return int(m.group(1))
    space = serve.env.get("VLLM_CPU_KVCACHE_SPACE")
    return int(float(space) * GIB) if space and re.fullmatch(r"\d+(\.\d+)?", space) else None


def measured(o: Observation) -> bool:
    m = o.signals.memory
    return o.gpu is not None and None not in (m.weights_gib, m.peak_activation_gib, m.non_torch_gib)


def identity_residual(o: Observation) -> float:
    """The KV GiB the log printed less what the budget's identity leaves of the log's own figures."""
    m, s = o.signals.memory, o.signals
    assert m.device_total_gib is not None and s.available_kv_cache_gib is not None
    left = o.serve.gpu_memory_utilization * m.device_total_gib - (m.weights_gib or 0) - (m.peak_activation_gib or 0)
    left -= (m.non_torch_gib or 0) + ((m.cudagraph_estimate_gib or 0) if graphs_in_budget(o.shape, o.serve) else 0)
    return s.available_kv_cache_gib - left


__all__ = [
    "KEYS",
    "MAX_CAPTURE",
    "SPIKE",
    "STATES",
    "activation_key",
    "activation_x",
    "asked_state",
    "capture",
    "embedding_gib",
    "hidden_batch_gib",
    "forward_bound",
    "graph_mode",
    "identity_residual",
    "kv_bytes_given",
    "kv_per_token",
    "measured",
    "observed_state",
    "peak_activation",
    "spike_gib",
    "state_peak",
    "weights_formula_gib",
]
