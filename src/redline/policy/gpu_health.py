"""GPU health beside a bench, judged (policy, pure): whether the clocks were held down, the GPU ran hot, or it
faulted while the bench ran. A bench on a throttled or faulted GPU measured the throttle or the fault, not the serve
config: it is flagged (its `gpu_health` check fails) and its figures are never ranked, with the reason said.

    rows = nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits      before the bench, every HEALTH_MS during
           it, and after it (ops/telemetry.py), one file beside the bench's result
    xid  = the kernel log's `NVRM: Xid` lines that came while it ran (dmesg), where the host lets it be read
    health = summarise(rows, file, xid, xid_why); check(health)

What flags a bench (NVML's clock event reasons, the `clocks_event_reasons.active` bitmask): a hardware slowdown
(0x8), a software or hardware thermal slowdown (0x20, 0x40), a hardware power brake (0x80), in any sample; an
uncorrected ECC error counted during the bench; an XID the kernel logged during it. What is said and not flagged: the
software power cap (0x4: a GPU at its power limit is running as it will in service), idle (0x1), application or
display clock settings (0x2, 0x100), sync boost (0x10). Older drivers name the field `clocks_throttle_reasons.active`
(the same bits); the sampler asks for the new name and falls back to the old, in the same column.
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.errors import InputError
from redline.models.clean_bench import BenchCheck
from redline.models.telemetry import GpuHealth, HealthRecord
from redline.policy.telemetry import figure, gpu_index

REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")  # the new name, then the old one
COLUMNS = (
    "timestamp",
    "index",
    "reasons",
    "temperature.gpu",
    "power.draw",
    "clocks.sm",
    "clocks.max.sm",
    "ecc.errors.uncorrected.volatile.total",
)
HEALTH_MS = 1000  # a thermal or power slowdown lasts seconds; one sample a second sees it


def query(reasons: str) -> str:
    """The health query with the reasons field under one of its names (REASONS)."""
    return ",".join(reasons if c == "reasons" else c for c in COLUMNS)


# Each reason bit, its name as NVML says it, and whether it flags a bench.
REASON_BITS: tuple[tuple[int, str, bool], ...] = (
    (0x1, "GPU idle", False),
    (0x2, "applications clocks setting", False),
    (0x4, "software power cap", False),
    (0x8, "hardware slowdown", True),
    (0x10, "sync boost", False),
    (0x20, "software thermal slowdown", True),
    (0x40, "hardware thermal slowdown", True),
    (0x80, "hardware power brake slowdown", True),
    (0x100, "display clock setting", False),
)
FLAGGING = frozenset(name for _, name, flags in REASON_BITS if flags)
HIGHEST = {"temperature.gpu": 200.0, "power.draw": 1e9, "clocks.sm": 1e9, "clocks.max.sm": 1e9}
MAX_ECC = 1 << 40
MAX_XID_LINES = 20


def reasons_of(text: str, where: str) -> list[str] | None:
    """The reasons a bitmask says (`0x0000000000000040`), None where the GPU reports none ([N/A]); InputError naming
    `where` for anything else."""
    if text.isascii() and text.lower().startswith("0x") and 3 <= len(text) <= 18:
        try:
            bits = int(text, 16)
        except ValueError:
            bits = None
        if bits is not None:
            return [name for bit, name, _ in REASON_BITS if bits & bit]
    try:
        unavailable = figure(text, "reasons", 1.0, where) is None  # [N/A]: the GPU reports none
    except InputError:
        unavailable = False
    if unavailable:
        return None
    raise InputError(f"{where}: reasons is {text[:40]!r}, not a clock event bitmask (0x...): refused")


def _ecc(text: str, where: str) -> int | None:
    value = figure(text, "ecc.errors.uncorrected.volatile.total", MAX_ECC, where)
    if value is not None and value != int(value):
        raise InputError(f"{where}: ecc.errors.uncorrected.volatile.total is {text[:40]!r}, not a count: refused")
    return None if value is None else int(value)


def rows(text: str, where: str) -> list[dict[str, object]]:
    """The health rows nvidia-smi wrote whole (a line cut off by the stop is left out), each checked: InputError,
    naming `where` and the line, for a row no nvidia-smi writes."""
    found: list[dict[str, object]] = []
    for n, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(COLUMNS):
            continue
        at = f"{where} line {n}"
        row = dict(zip(COLUMNS, cells, strict=True))
        parsed: dict[str, object] = {"index": gpu_index(row["index"], at), "reasons": reasons_of(row["reasons"], at)}
        parsed |= {f: figure(row[f], f, highest, at) for f, highest in HIGHEST.items()}
        parsed["ecc"] = _ecc(row["ecc.errors.uncorrected.volatile.total"], at)
        found.append(parsed)
    return found


def _numbers(mine: Sequence[dict[str, object]], field: str) -> list[float]:
    return [v for r in mine if isinstance(v := r[field], float)]


def _gpu(index: int, mine: list[dict[str, object]]) -> GpuHealth:
    seen: dict[str, int] = {}
    for r in mine:
        for name in r["reasons"] or []:  # type: ignore[attr-defined]
            seen[name] = seen.get(name, 0) + 1
    ecc = [v for r in mine if isinstance(v := r["ecc"], int)]
    temps, power, clocks = _numbers(mine, "temperature.gpu"), _numbers(mine, "power.draw"), _numbers(mine, "clocks.sm")
    top = _numbers(mine, "clocks.max.sm")
    return GpuHealth(
        index=index,
        samples=len(mine),
        reasons=seen,
        temperature_c_max=max(temps) if temps else None,
        power_w_max=max(power) if power else None,
        sm_clock_mhz_min=min(clocks) if clocks else None,
        sm_clock_mhz_max_allowed=max(top) if top else None,
        ecc_uncorrected_new=(ecc[-1] - ecc[0]) if len(ecc) >= 2 else None,
    )


def summarise(text: str, file: str | None, xid: list[str] | None, xid_why: str) -> HealthRecord | None:
    """Each GPU's health over the bench; None where no row could be read and no XID was asked."""
    found = rows(text, f"nvidia-smi's health rows{f' ({file})' if file else ''}")
    by_gpu: dict[int, list[dict[str, object]]] = {}
    for row in found:
        by_gpu.setdefault(row["index"], []).append(row)  # type: ignore[arg-type]
    if not by_gpu and xid is None:
        return None
    gpus = [_gpu(i, by_gpu[i]) for i in sorted(by_gpu)]
    return HealthRecord(file=file if by_gpu else None, gpus=gpus, xid=xid, xid_why=None if xid is not None else xid_why)


def xid_lines(text: str) -> list[str]:
    """The kernel log's XID lines as the host printed them, each cut to 300 characters, at most MAX_XID_LINES."""
    return [line.strip()[:300] for line in text.splitlines() if "NVRM: Xid" in line][:MAX_XID_LINES]


def _faults(h: HealthRecord) -> list[str]:
    said = []
    for g in h.gpus:
        bad = {name: n for name, n in g.reasons.items() if name in FLAGGING}
        if bad:
            each = ", ".join(f"{name} in {n} of {g.samples} samples" for name, n in bad.items())
            hot = f"; {g.temperature_c_max:.0f} C at most" if g.temperature_c_max is not None else ""
            said.append(f"GPU {g.index}'s clocks were held down ({each}{hot})")
        if g.ecc_uncorrected_new:
            said.append(f"GPU {g.index} counted {g.ecc_uncorrected_new} new uncorrected ECC error(s)")
    if h.xid:
        said.append(f"the kernel logged {len(h.xid)} XID error(s) ({h.xid[0][-160:]})")
    return said


def _state(h: HealthRecord) -> str:
    each = []
    for g in h.gpus:
        parts = [f"GPU {g.index}: {g.samples} samples"]
        if g.temperature_c_max is not None:
            parts.append(f"{g.temperature_c_max:.0f} C at most")
        if g.sm_clock_mhz_min is not None:
            top = f" of {g.sm_clock_mhz_max_allowed:.0f}" if g.sm_clock_mhz_max_allowed is not None else ""
            parts.append(f"SM clock down to {g.sm_clock_mhz_min:.0f}{top} MHz")
        benign = [f"{name} in {n}" for name, n in g.reasons.items() if name not in FLAGGING and name != "GPU idle"]
        parts.append(("clock events: " + ", ".join(benign)) if benign else "no clock slowdown")
        each.append(", ".join(parts))
    xid = "no XID logged" if h.xid is not None else f"XIDs not read ({h.xid_why})"
    ecc = "ECC not reported" if all(g.ecc_uncorrected_new is None for g in h.gpus) else "no new ECC error"
    return "; ".join([*each, ecc, xid])


def check(health: HealthRecord | None, why_none: str) -> BenchCheck:
    """The bench's GPU health check: flagged when a GPU was throttled or faulted while it ran."""
    if health is None:
        return BenchCheck(check="gpu_health", ok=True, said=f"GPU health not read: {why_none}")
    faults = _faults(health)
    if faults:
        return BenchCheck(
            check="gpu_health",
            ok=False,
            said="; ".join(faults) + ": it measured a throttled or faulted GPU, not the serve config; not ranked",
        )
    return BenchCheck(check="gpu_health", ok=True, said=_state(health))


__all__ = ["COLUMNS", "FLAGGING", "HEALTH_MS", "REASONS", "check", "query", "reasons_of", "rows", "summarise"]
