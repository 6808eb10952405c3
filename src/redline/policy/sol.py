"""The decode memory-bound ceiling, as pure arithmetic: no I/O here.

A decode step reads every weight once and, for each running request, its whole KV
cache. At the datasheet bandwidth that takes bytes / bandwidth seconds and yields one
token per running request, so

    ceiling (output tokens/s) = batch x bandwidth x GPUs / (DP x weight bytes + batch x context x KV bytes/token)

with batch = the concurrency (capped by max_num_seqs) and context = input_len + output_len / 2,
the mean KV length a request holds over its decode. Activations, the prefill and the
host are left out: the ceiling is an upper bound no real run reaches. Tests work the
arithmetic by hand for the H200 fixture shapes (tests/policy/test_sol.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from redline.models.shape import ModelShape, kv_bytes_per_token, weight_bytes
from redline.models.sol import GpuPeaks, SolFigure, SolTable
from redline.models.telemetry import GpuTelemetry


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
    if shape.is_moe:
        return SolFigure(
            key=key, basis="no ceiling: a mixture-of-experts model: the bytes a decode step reads depend on its routing"
        )
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


def with_telemetry(sol: SolFigure | None, telemetry: GpuTelemetry | None) -> SolFigure | None:
    """The figure with what the GPUs were seen doing beside it: telemetry-backed where the bench was sampled."""
    if sol is None or telemetry is None or not telemetry.gpus:
        return sol
    busy = sum(g.memory_busy_pct for g in telemetry.gpus) / len(telemetry.gpus)
    drams = [d for g in telemetry.gpus if (d := g.dram_active_pct) is not None]
    dram = round(sum(drams) / len(drams), 2) if len(drams) == len(telemetry.gpus) else None  # every GPU, or none
    update = {"rigour": "telemetry-backed", "memory_busy_pct": round(busy, 2), "dram_active_pct": dram}
    return sol.model_copy(update=update)


__all__ = ["decode_ceiling", "peaks_for", "with_telemetry"]
