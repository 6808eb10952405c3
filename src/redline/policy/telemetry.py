"""GPU telemetry beside a bench, judged (policy, pure): the sampler's rows summarised per GPU, the processes that
held a GPU and were not the server's, and the bench check that says so.

    rows = nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits -lms INTERVAL_MS   (ops/telemetry.py)
    summary = summarise(rows, INTERVAL_MS, "telemetry-c16.csv", others)
    check(summary, why_none)   # "gpu": flagged when another process held the GPU; said what it saw otherwise

A bench whose GPU another process held measured a shared GPU: flagged, never ranked. nvidia-smi's memory figure is
the share of time device memory was read or written, not bytes/s: it is said as such, beside the arithmetic
speed-of-light figure, never in its place; DCGM's DRAM active, where the host has DCGM (policy/dcgm.py), is the
bandwidth share.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from datetime import datetime

from redline.errors import InputError
from redline.models.clean_bench import BenchCheck
from redline.models.telemetry import GpuSeries, GpuTelemetry

QUERY = (
    "timestamp",
    "index",
    "uuid",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "power.draw",
    "clocks.sm",
)
INTERVAL_MS = 200
APPS_QUERY = ("pid", "process_name", "used_memory")


HIGHEST = {
    "utilization.gpu": 100.0,
    "utilization.memory": 100.0,
    "memory.used": 1e9,
    "power.draw": 1e9,
    "clocks.sm": 1e9,
}
_UNAVAILABLE = re.compile(r"^\[?[A-Za-z][A-Za-z /]{0,30}\]?$")  # [N/A], [Not Supported], N/A: the tool has none


def figure(text: str, field: str, highest: float, where: str) -> float | None:
    """A figure as the tool wrote it, None where it says it has none ([N/A]); InputError, naming `where` and the field,
    for anything else (`inf`, `²`, a 5,000-digit number, one past `highest`): the tool's output is refused."""
    try:
        value = float(text) if text.isascii() and len(text) <= 32 else None
    except ValueError:
        value = None
    if value is None and _UNAVAILABLE.match(text):
        return None
    if value is None or not 0 <= value <= highest:  # NaN fails too
        raise InputError(f"{where}: {field} is {text[:40]!r}, not a figure from 0 to {highest:g}: refused")
    return value


def gpu_index(text: str, where: str) -> int:
    """A GPU's index as the tool wrote it: a whole number up to 1,024, else InputError naming `where`."""
    if not (text.isascii() and text.isdigit() and len(text) <= 4 and int(text) <= 1024):
        raise InputError(f"{where}: GPU index {text[:40]!r} is not a GPU index: refused")
    return int(text)


def _number(text: str) -> float | None:
    return None if _UNAVAILABLE.match(text) else float(text)  # a figure rows() checked


def rows(text: str, where: str = "nvidia-smi's samples") -> list[dict[str, str]]:
    """The sampler's rows it could read whole (a line cut off by the stop is left out; one whose GPU had no
    utilization figure too), each figure checked: InputError, naming `where`, for a row no nvidia-smi writes."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(QUERY):
            continue
        row = dict(zip(QUERY, cells, strict=True))
        gpu_index(row["index"], f"{where} line {n}")
        if len(row["uuid"]) > 128:
            raise InputError(f"{where} line {n}: uuid {row['uuid'][:40]!r}... is not a GPU's uuid: refused")
        said = [figure(row[f], f, highest, f"{where} line {n}") for f, highest in HIGHEST.items()]
        if said[0] is not None:
            found.append(row)
    return found


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.fmean(known), 2) if known else None


def _series(index: int, mine: list[dict[str, str]]) -> GpuSeries:
    busy = [_number(r["utilization.gpu"]) or 0.0 for r in mine]
    memory = [_number(r["utilization.memory"]) or 0.0 for r in mine]
    used = [v for r in mine if (v := _number(r["memory.used"])) is not None]
    return GpuSeries(
        index=index,
        uuid=mine[0]["uuid"],
        samples=len(mine),
        gpu_busy_pct=round(statistics.fmean(busy), 2),
        gpu_busy_peak_pct=max(busy),
        memory_busy_pct=round(statistics.fmean(memory), 2),
        memory_busy_peak_pct=max(memory),
        memory_used_mib_peak=max(used) if used else None,
        power_w=_mean([_number(r["power.draw"]) for r in mine]),
        sm_clock_mhz=_mean([_number(r["clocks.sm"]) for r in mine]),
    )


def _span_s(found: list[dict[str, str]]) -> float:
    try:
        times = [datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f") for r in found]
    except ValueError:
        return 0.0
    return round((max(times) - min(times)).total_seconds(), 3)


def summarise(text: str, interval_ms: int, file: str | None, others: list[str] | None) -> GpuTelemetry | None:
    """The samples per GPU; None where the sampler wrote no row it could read."""
    found = rows(text, f"nvidia-smi's samples{f' ({file})' if file else ''}")
    if not found:
        return None
    by_gpu: dict[int, list[dict[str, str]]] = {}
    for row in found:
        by_gpu.setdefault(int(row["index"]), []).append(row)
    gpus = [_series(i, by_gpu[i]) for i in sorted(by_gpu)]
    return GpuTelemetry(file=file, interval_ms=interval_ms, seconds=_span_s(found), gpus=gpus, others=others)


def others_of(apps: str, groups: dict[int, int] | None, server_group: int | None) -> list[str] | None:
    """The GPU's processes (nvidia-smi --query-compute-apps rows) that this host runs outside the server's process
    group; None where that cannot be told. A pid the host's process list lacks (another PID namespace) is not
    counted: it cannot be told apart from the server's own."""
    if groups is None or server_group is None:
        return None
    found = []
    for line in apps.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == len(APPS_QUERY) and cells[0].isascii() and cells[0].isdigit() and len(cells[0]) <= 10:
            pid = int(cells[0])
            if pid in groups and groups[pid] != server_group:
                found.append(f"pid {pid} ({cells[1][:64]}, {cells[2][:16]} MiB)")
    return found


def process_groups(ps: str) -> dict[int, int] | None:
    """`ps -e -o pid=,pgid=` as pid -> process group; None where it listed nothing."""
    groups = {}
    for line in ps.splitlines():
        cells = line.split()
        if len(cells) == 2 and all(c.isascii() and c.isdigit() and len(c) <= 10 for c in cells):
            groups[int(cells[0])] = int(cells[1])
    return groups or None


def _profiled(g: GpuSeries) -> bool:
    return g.dram_active_pct is not None and g.sm_active_pct is not None


def check(telemetry: GpuTelemetry | None, why_none: str) -> BenchCheck:
    """The bench's GPU check: flagged when another process held a GPU; else what the GPUs did, or why unknown."""
    if telemetry is None:
        return BenchCheck(check="gpu", ok=True, said=f"no GPU telemetry: {why_none}")
    if telemetry.others:
        return BenchCheck(
            check="gpu",
            ok=False,
            said=f"another process held the GPU when the bench started ({'; '.join(telemetry.others)}): it measured "
            "a shared GPU; not ranked",
        )
    each = ", ".join(
        f"GPU {g.index} ran kernels {g.gpu_busy_pct:.0f}% of the time and read or wrote memory {g.memory_busy_pct:.0f}%"
        + (f" (DCGM: DRAM active {g.dram_active_pct:.0f}%, SM active {g.sm_active_pct:.0f}%)" if _profiled(g) else "")
        for g in telemetry.gpus
    )
    unknown = "" if telemetry.others is not None else "; other processes on it not known"
    samples = sum(g.samples for g in telemetry.gpus)
    return BenchCheck(
        check="gpu", ok=True, said=f"{each} ({samples} samples every {telemetry.interval_ms} ms){unknown}"
    )


__all__ = ["APPS_QUERY", "INTERVAL_MS", "QUERY", "check", "others_of", "process_groups", "rows", "summarise"]
