"""The terms of vLLM's KV budget as a config sets them, before any fit: the weights' formula, the profile run's
size, KV bytes per token, what a boot's log says the identity left, and the shape of the profile's peak.

    KV GiB = utilisation x device total - weights - peak activation - non-torch [- CUDA graph estimate]

The bracket is the V1 model runner's with graphs on (runner.graphs_in_budget): it estimates its graphs and takes them
from the budget; the V2 runner captures them after the cache is sized. The peak activation is the larger of the
forward pass's (a fitted line in batched tokens x the MLP's bytes per token) and, on the V2 runner, what its sampling
holds after the forward pass (runner.v2_sampler_gib, from vLLM's code); the V1 runner's sampling adds to the line
(runner.v1_sampler_gib).
"""

from __future__ import annotations

import re

from redline.engines.memory_fit import at
from redline.engines.vllm.runner import DEFAULT_SEQS, graphs_in_budget, mnbt_of, v1_sampler_gib, v2_sampler_gib
from redline.errors import InputError
from redline.models.memory import GIB, Fit, Observation
from redline.models.serve import ServeConfig, is_eager
from redline.models.shape import ModelShape, kv_bytes_per_token, mlp_activation_bytes, rope_cache_bytes, weight_bytes

MAX_CAPTURE = 512  # the largest batch vLLM captures a CUDA graph for by default
KV_BYTES_FLAG = re.compile(r"^--kv-cache-memory(?:-bytes)?=(\d+)$")
KEYS = ("activation_eager", "activation_graphs", "activation_moe_eager", "activation_moe_graphs")


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


def activation_key(shape: ModelShape, serve: ServeConfig) -> str:
    """The activation line a config is on: its model's class (dense or MoE) and its graph mode."""
    return f"activation_{'moe_' if shape.is_moe else ''}{graph_mode(serve)}"


def forward_bound(shape: ModelShape, serve: ServeConfig) -> bool:
    """Whether the forward pass, not the V2 runner's sampling, sets the profile's peak (batched tokens' bytes at least
    the sampling's): only such boots place the forward's line."""
    return activation_x(shape, serve) >= v2_sampler_gib(shape, serve)


def peak_activation(fit: Fit, shape: ModelShape, serve: ServeConfig, bytes_per_logit: float) -> float:
    """The profile run's peak on a fitted line: the forward's, or the V2 sampling's above the line's own intercept
    (what the profile holds besides), whichever is larger; plus the V1 runner's sampling at its bytes a logit."""
    sampling = fit.coefficients["intercept"] + v2_sampler_gib(shape, serve)
    return max(at(fit, activation_x(shape, serve)), sampling) + v1_sampler_gib(shape, serve, bytes_per_logit)


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
    "activation_key",
    "activation_x",
    "capture",
    "forward_bound",
    "graph_mode",
    "identity_residual",
    "kv_bytes_given",
    "kv_per_token",
    "measured",
    "peak_activation",
    "weights_formula_gib",
]
