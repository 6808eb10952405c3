"""GPU telemetry sampled beside a bench: what each GPU did while the bench ran, and whose processes held it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Pct = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]
Amount = Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)]


class GpuSeries(BaseModel):
    """One GPU over a bench, from the sampler's rows for it."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, le=1024)
    uuid: str = Field(max_length=128)
    samples: int = Field(ge=1)
    gpu_busy_pct: Pct = Field(description="nvidia-smi utilization.gpu, mean: the share of time a kernel ran")
    gpu_busy_peak_pct: Pct
    memory_busy_pct: Pct = Field(
        description="nvidia-smi utilization.memory, mean: the share of time device memory was read or written "
        "(a time share, not bytes/s against the datasheet bandwidth)"
    )
    memory_busy_peak_pct: Pct
    memory_used_mib_peak: Amount | None = None
    power_w: Amount | None = Field(None, description="mean power draw; null where the GPU reports none")
    sm_clock_mhz: Amount | None = Field(None, description="mean SM clock")
    sm_active_pct: Pct | None = Field(
        None, description="DCGM's SM active (field 1002), mean: the share of cycles an SM had a warp; null without DCGM"
    )
    dram_active_pct: Pct | None = Field(
        None,
        description="DCGM's DRAM active (field 1005), mean: the share of cycles device memory moved data, the measured "
        "share of its bandwidth; null without DCGM",
    )


class GpuHealth(BaseModel):
    """One GPU's health over a bench: the clock event reasons its samples showed, how hot it ran, its ECC errors."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, le=1024)
    samples: int = Field(ge=1, description="health rows: one before the bench, one a second during it, one after")
    reasons: dict[Annotated[str, Field(max_length=64)], Annotated[int, Field(ge=1)]] = Field(
        {}, description="each clock event reason (NVML's names) and the samples it was active in"
    )
    temperature_c_max: Amount | None = None
    power_w_max: Amount | None = None
    sm_clock_mhz_min: Amount | None = None
    sm_clock_mhz_max_allowed: Amount | None = Field(None, description="clocks.max.sm: the highest SM clock it allows")
    ecc_uncorrected_new: int | None = Field(
        None, ge=0, description="uncorrected ECC errors counted during the bench (after - before); null: not reported"
    )


class HealthRecord(BaseModel):
    """The GPUs' health beside one bench (policy/gpu_health.py): kept as a file beside its result (`file`)."""

    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(None, description="the health rows beside the bench's result file")
    gpus: list[GpuHealth] = []
    xid: Annotated[list[Annotated[str, Field(max_length=300)]], Field(max_length=20)] | None = Field(
        None, description="the XID lines the kernel logged while the bench ran; null: the kernel log was not readable"
    )
    xid_why: str | None = Field(None, description="why the kernel log was not read")


class GpuTelemetry(BaseModel):
    """The GPUs sampled beside one bench, kept as a file beside its result (`file`, every sample as the tool wrote
    it), summarised here."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["nvidia-smi"] = "nvidia-smi"
    file: str | None = Field(None, description="the samples beside the bench's result file")
    dcgm_file: str | None = Field(
        None, description="DCGM's profiling samples beside it (dcgmi dmon), where the host has dcgmi and they were read"
    )
    interval_ms: int = Field(ge=1, le=60_000, description="the sampling interval asked of the tool")
    seconds: Amount = Field(description="from the first sample to the last")
    gpus: list[GpuSeries] = []
    others: list[str] | None = Field(
        None,
        description="processes of this host, not the server's, holding a GPU when the bench started (pid and "
        "name); null where it could not be told (no process list, or a server that is not a process group here)",
    )
    health: HealthRecord | None = Field(
        None, description="clock event reasons, temperature, ECC and XID before, during and after the bench"
    )
    health_why: str | None = Field(None, description="why health is null")


__all__ = ["GpuHealth", "GpuSeries", "GpuTelemetry", "HealthRecord"]
