"""DCGM's profiling samples beside a bench, read (policy, pure): where the server's host has `dcgmi`, the sampler
also runs `dcgmi dmon -e 1002,1005 -d MS` (ops/telemetry.py), and each GPU's SM-active and DRAM-active ratios are
added to its nvidia-smi summary.

    text = dcgmi dmon -e FIELDS -d INTERVAL_MS         # "#Entity SMACT DRAMA" / "ID" / "GPU 0  0.512  0.234" ...
    telemetry = with_dcgm(telemetry, text, file_of("bench-c16.gpu.csv"))   # its dcgm_file: bench-c16.dcgm.txt

DRAM active (field 1005) is the share of cycles the device memory interface was sending or receiving data: the
measured share of the memory bandwidth, which nvidia-smi's utilization.memory (a share of time) is not. SM active
(1002) is the share of cycles an SM had a warp. The text is dmon's own (NVIDIA/DCGM dcgmi/DeviceMonitor.cpp): a
header line and a unit line, repeated every 14 rows, then one row per entity, `GPU <id>` and each value with three
decimals, N/A where the field has none; a line cut off by the stop is left out.
"""

from __future__ import annotations

import statistics

from redline.models.telemetry import GpuSeries, GpuTelemetry
from redline.policy.telemetry import figure, gpu_index

FIELDS = (1002, 1005)  # DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE: dmon's columns SMACT, DRAMA, in this order
NAMES = ("SMACT", "DRAMA")


def samples(text: str, where: str = "dcgmi's samples") -> dict[int, list[tuple[float | None, float | None]]]:
    """Each GPU's (SM active, DRAM active) rows, by GPU id; InputError, naming `where`, for a row no dmon writes (a
    ratio of `inf`, `²` or past 1)."""
    found: dict[int, list[tuple[float | None, float | None]]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        cells = line.split()
        if len(cells) != 2 + len(FIELDS) or cells[0] != "GPU":
            continue
        gpu = gpu_index(cells[1], f"{where} line {n}")
        sm, dram = (figure(c, name, 1.0, f"{where} line {n}") for c, name in zip(cells[2:], NAMES, strict=True))
        if sm is not None or dram is not None:
            found.setdefault(gpu, []).append((sm, dram))
    return found


def _pct(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(100 * statistics.fmean(known), 2) if known else None


def _with(series: GpuSeries, rows: list[tuple[float | None, float | None]]) -> GpuSeries:
    sm, dram = _pct([r[0] for r in rows]), _pct([r[1] for r in rows])
    return series.model_copy(update={"sm_active_pct": sm, "dram_active_pct": dram})


def file_of(samples_name: str) -> str:
    """DCGM's samples beside nvidia-smi's: bench-c16.gpu.csv -> bench-c16.dcgm.txt."""
    stem = samples_name.removesuffix(".gpu.csv")
    return f"{stem}.dcgm.txt"


def with_dcgm(telemetry: GpuTelemetry | None, text: str, file: str) -> GpuTelemetry | None:
    """The telemetry with each GPU's DCGM ratios where dmon sampled it (its `dcgm_file` said), else as it was."""
    found = samples(text, f"dcgmi's samples ({file})")
    if telemetry is None or not any(g.index in found for g in telemetry.gpus):
        return telemetry
    gpus = [_with(g, found[g.index]) if g.index in found else g for g in telemetry.gpus]
    return telemetry.model_copy(update={"gpus": gpus, "dcgm_file": file})


__all__ = ["FIELDS", "file_of", "samples", "with_dcgm"]
