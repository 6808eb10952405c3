"""The decode memory-bound ceiling, as pure arithmetic: no I/O here.

A decode step reads every weight once and, for each running request, its whole KV
cache. At the datasheet bandwidth that takes bytes / bandwidth seconds and yields one
token per running request, so

    ceiling (output tokens/s) = batch x bandwidth x GPUs / (DP x weight bytes + batch x context x KV bytes/token)

with batch = the concurrency (capped by max_num_seqs) and context = input_len + output_len / 2,
the mean KV length a request holds over its decode. Activations, the prefill and the
host are left out: the ceiling is an upper bound no real run reaches. Tests work the
arithmetic by hand for the H200 fixture shapes (tests/rigor/test_sol.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redline.models.sol import GpuPeaks, ModelShape, SolFigure, SolTable

DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "half": 2.0, "float32": 4.0, "float": 4.0}
# Bytes per weight of the linear layers under a quantization (embeddings and the LM head stay at the model's dtype).
QUANT_BYTES = {
    "fp8": 1.0,
    "fbgemm_fp8": 1.0,
    "compressed-tensors": 1.0,
    "awq": 0.5,
    "gptq": 0.5,
    "awq_marlin": 0.5,
    "gptq_marlin": 0.5,
    "bitsandbytes": 0.5,
}
KV_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "bfloat16": 2, "float16": 2, "half": 2, "float32": 4}
MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config (multimodal configs nest it under text_config)."""
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) else config


def shape_of(config: Mapping[str, Any]) -> tuple[ModelShape | None, str]:
    """The dense decoder shape a config.json describes, or None and why redline cannot size it."""
    c = _text_config(config)
    if any(c.get(key) for key in MOE_KEYS):
        return None, "a mixture-of-experts model: the bytes a decode step reads depend on its routing"
    need = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")
    missing = [k for k in need if not isinstance(c.get(k), int)]
    if missing:
        return None, f"config.json lacks {', '.join(missing)}"
    heads = c["num_attention_heads"]
    dtype = str(c.get("torch_dtype") or config.get("torch_dtype") or "bfloat16")
    if dtype not in DTYPE_BYTES:
        return None, f"torch_dtype {dtype!r} is not one redline sizes ({', '.join(DTYPE_BYTES)})"
    shape = ModelShape(
        architecture=(config.get("architectures") or [None])[0],
        layers=c["num_hidden_layers"],
        hidden=c["hidden_size"],
        intermediate=c["intermediate_size"],
        heads=heads,
        kv_heads=c.get("num_key_value_heads") or heads,
        head_dim=c.get("head_dim") or c["hidden_size"] // heads,
        vocab=c["vocab_size"],
        tied_embeddings=bool(c.get("tie_word_embeddings", False)),
        attention_bias=bool(c.get("attention_bias", c.get("model_type") == "qwen2")),
        dtype_bytes=DTYPE_BYTES[dtype],
    )
    return shape, "dense decoder"


def layer_params(s: ModelShape) -> int:
    """One decoder layer: q, k, v, o projections (with their biases), the gated MLP, two norms."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    attention = s.hidden * q + 2 * s.hidden * kv + q * s.hidden
    bias = q + 2 * kv if s.attention_bias else 0
    return attention + bias + 3 * s.hidden * s.intermediate + 2 * s.hidden


def embedding_params(s: ModelShape) -> int:
    """The token embedding and, unless tied, the LM head."""
    return s.vocab * s.hidden * (1 if s.tied_embeddings else 2)


def param_count(s: ModelShape) -> int:
    return embedding_params(s) + s.layers * layer_params(s) + s.hidden  # + the final norm


def weight_bytes(s: ModelShape, quantization: str | None = None) -> int | None:
    """Bytes of weights one replica reads per decode step; None for a quantization redline does not size."""
    if quantization is None:
        return int(param_count(s) * s.dtype_bytes)
    per = QUANT_BYTES.get(quantization)
    if per is None:
        return None
    linear = s.layers * layer_params(s)
    return int(linear * per + (embedding_params(s) + s.hidden) * s.dtype_bytes)


def kv_bytes_per_token(s: ModelShape, kv_cache_dtype: str | None = None) -> int | None:
    """K and V of every layer for one token; auto is the model's own dtype."""
    per = s.dtype_bytes if kv_cache_dtype in (None, "auto") else KV_BYTES.get(kv_cache_dtype)
    if per is None:
        return None
    return int(2 * s.layers * s.kv_heads * s.head_dim * per)


def peaks_for(table: SolTable, gpu_name: str | None) -> tuple[str, GpuPeaks] | None:
    """The first ceiling whose match names the GPU (as nvidia-smi prints it)."""
    if not gpu_name:
        return None
    for key, peaks in table.ceilings.items():
        if any(m.lower() in gpu_name.lower() for m in peaks.match):
            return key, peaks
    return None


def decode_ceiling(
    table: SolTable,
    gpu_name: str | None,
    shape: ModelShape | None,
    *,
    gpus: int,
    dp: int,
    batch: int,
    input_len: int,
    output_len: int,
    kv_cache_dtype: str | None = None,
    quantization: str | None = None,
    measured_tokens_per_s: float | None = None,
    shape_note: str = "",
) -> SolFigure:
    """The decode memory-bound ceiling for one measured point, and the measured figure's % of it."""
    found = peaks_for(table, gpu_name)
    if found is None:
        why = "no GPU on this host" if not gpu_name else f"no sol-ceilings.yaml entry matches GPU {gpu_name!r}"
        return SolFigure(key=None, basis=f"no ceiling: {why}")
    key, peaks = found
    if shape is None:
        return SolFigure(key=key, basis=f"no ceiling: the model's shape is unknown ({shape_note or 'no config.json'})")
    weights = weight_bytes(shape, quantization)
    kv = kv_bytes_per_token(shape, kv_cache_dtype)
    if weights is None or kv is None:
        what = f"quantization {quantization!r}" if weights is None else f"kv_cache_dtype {kv_cache_dtype!r}"
        return SolFigure(key=key, basis=f"no ceiling: redline does not size {what}")
    point = _Point(gpus=gpus, dp=dp, batch=batch, context=input_len + output_len / 2)
    return _memory_bound(key, peaks, weights, kv, point, measured_tokens_per_s)


@dataclass(frozen=True)
class _Point:
    """What a decode step of one measured point reads: GPUs, replicas, sequences, mean context per sequence."""

    gpus: int
    dp: int
    batch: int
    context: float  # the prompt and half the output: the mean length a sequence's KV has while it decodes


def _memory_bound(
    key: str, peaks: GpuPeaks, weights: int, kv: int, p: _Point, measured_tokens_per_s: float | None
) -> SolFigure:
    """The sized ceiling: each decode step reads every replica's weights and every sequence's KV once."""
    step = p.dp * weights + p.batch * p.context * kv
    bandwidth = peaks.memory_bandwidth_gb_s * 1e9 * p.gpus
    ceiling = p.batch * bandwidth / step
    pct = None if measured_tokens_per_s is None else 100.0 * measured_tokens_per_s / ceiling
    return SolFigure(
        key=key,
        ceiling_tokens_per_s=ceiling,
        pct_of_ceiling=pct,
        batch=p.batch,
        context_tokens=p.context,
        weight_bytes=weights,
        kv_bytes_per_token=kv,
        bytes_per_step=step,
        weights_share=p.dp * weights / step,
        basis=(
            f"decode memory-bound: {p.batch} x {peaks.memory_bandwidth_gb_s:g} GB/s x {p.gpus} GPU / "
            f"({p.dp} x {weights:,} weight bytes + {p.batch} x {p.context:g} tokens x {kv:,} KV bytes) "
            f"({peaks.datasheet})"
        ),
    )


__all__ = [
    "decode_ceiling",
    "embedding_params",
    "kv_bytes_per_token",
    "layer_params",
    "param_count",
    "peaks_for",
    "shape_of",
    "weight_bytes",
]
