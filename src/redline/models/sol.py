"""Speed-of-light shapes: a GPU's datasheet peaks, a dense decoder's shape, and a figure's % of its ceiling."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from redline.models.bench import MAX_TOKENS, Figure
from redline.models.strict import Strict

Bytes = Annotated[int, Field(ge=0, le=MAX_TOKENS)]  # a model's bytes: past any real one
ByteFigure = Annotated[float, Field(ge=0, le=MAX_TOKENS, allow_inf_nan=False)]


class GpuPeaks(Strict):
    """One GPU's datasheet peaks (per GPU), and the datasheet they come from."""

    name: str
    match: Annotated[list[str], Field(min_length=1)]
    memory_gib: Annotated[float, Field(gt=0)]
    memory_bandwidth_gb_s: Annotated[float, Field(gt=0)]
    bf16_dense_tflops: Annotated[float, Field(gt=0)]
    fp8_dense_tflops: Annotated[float, Field(gt=0)]
    datasheet: Annotated[str, Field(min_length=1)]


class SolTable(Strict):
    """sol-ceilings.yaml."""

    schema_version: Literal[1] = 1
    ceilings: dict[str, GpuPeaks]


class SolFigure(Strict):
    """A throughput figure against the decode memory-bound ceiling of its hardware, model and batch."""

    key: str | None = Field(None, description="the sol-ceilings.yaml entry the ceiling is set against; null: none")
    ceiling_tokens_per_s: Figure | None = Field(
        None, description="output tokens/s if every decode step only read its bytes at the datasheet bandwidth"
    )
    pct_of_ceiling: Figure | None = Field(None, description="the measured output throughput as % of the ceiling")
    batch: Annotated[int, Field(ge=0, le=1 << 26)] | None = Field(
        None, description="running requests per decode step: the concurrency, capped by max_num_seqs"
    )
    context_tokens: Figure | None = Field(
        None, description="mean tokens in each request's KV cache over its decode: input_len + output_len / 2"
    )
    weight_bytes: Bytes | None = None
    kv_bytes_per_token: Bytes | None = None
    bytes_per_step: ByteFigure | None = None
    weights_share: Figure | None = Field(None, description="weight bytes / bytes per step: what fp8 weights could save")
    basis: str = Field(description="how the ceiling was worked, or why there is none")
    rigour: Literal["arithmetic", "telemetry-backed"] = Field(
        "arithmetic",
        description="arithmetic: the datasheet ceiling against the measured throughput only; telemetry-backed: "
        "with what the GPU was seen doing during the bench beside it (memory_busy_pct; dram_active_pct with DCGM)",
    )
    memory_busy_pct: Figure | None = Field(
        None,
        description="nvidia-smi's utilization.memory during the bench, the mean over its GPUs: the share of time "
        "device memory was read or written (a time share, not bytes/s); null without telemetry",
    )
    dram_active_pct: Figure | None = Field(
        None,
        description="DCGM's DRAM active during the bench, the mean over its GPUs: the measured share of the memory "
        "bandwidth, beside the arithmetic pct_of_ceiling; null where the host had no DCGM",
    )


__all__ = ["GpuPeaks", "SolFigure", "SolTable"]
