"""A run that measured nothing usable: every trial of an A/B, or every cell of a campaign, failed. Such a run ends
failed, not succeeded, and says why once (the reasons its units gave, counted) and what fixes it (by the checks that
failed); pure.

    failed = unusable("trial", {"seqs4-1": "concurrency 4: prefix cache ...", "seqs8-1": None}, ["prefix_cache"], again)
    failed.cause   # "every trial failed (6 of 6): concurrency 4: prefix cache not emptied ..."
    failed.fix     # "... let redline empty the cache before each bench (...), or give the workload another seed ..."
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

# What fixes a check every unit failed, by the check's name (models/clean_bench.py)
FIXES = {
    "prefix_cache": "the benches found prompts in the prefix cache: run where no other client sends the server "
    "requests, let redline empty it before each bench (a server listening on loopback alone, 127.0.0.1 by default, "
    "on a target whose dev_mode is on and whose env does not turn the engine's reset off: docs/security.md, 38.1), "
    "or give the workload another seed (random prompts of one seed can repeat each other in a small vocabulary)",
    "client": "the bench client never held the concurrency asked: give each concurrency more prompts "
    "(workload.num_prompts, at least 2 x c) or run the client where it is not starved of CPU",
    "gpu": "another process held the GPU during the benches: run where redline's server has the GPU alone",
    "figures": "the bench client reported figures its own workload makes impossible (a TPOT under the engine's "
    "floor, an ITL of 0, a throughput above its tokens over its wall time): read each bench's result file; a bench "
    "client and engine of matching versions report real ones",
    "gpu_health": "the GPU was throttled (thermal or power slowdown) or faulted (ECC, XID) during the benches: "
    "cool it, check its power and errors (nvidia-smi -q, the kernel log), or run on another GPU",
    "rate": "the bench client could not send the request rate asked: run it where it is not starved of CPU, or ask a "
    "lower rate",
}
OTHERWISE = "read each one's boot.log and bench results (the reasons above), fix the config or the target"


class Unusable(NamedTuple):
    cause: str
    fix: str


def unusable(
    unit: str, failures: Mapping[str, str | None], failed_checks: Sequence[str], again: str
) -> Unusable | None:
    """Why a run of `unit`s (trial, cell) measured nothing usable, and the fix; None where any unit succeeded or none
    is on record. `failures`: every unit on record, and why it failed (None: it succeeded); `failed_checks`: the names
    of the checks they failed; `again`: how to run them again."""
    reasons = {k: why for k, why in failures.items() if why is not None}
    if not failures or len(reasons) < len(failures):
        return None
    counted = Counter(reasons.values()).most_common()
    said = "; ".join(f"{n} of {len(reasons)}: {why}" if n < len(reasons) else why for why, n in counted[:3])
    more = f"; and {len(counted) - 3} other reasons" if len(counted) > 3 else ""
    cause = f"every {unit} failed ({len(reasons)} of {len(reasons)}): {said}{more}"
    fixes = [FIXES[c] for c in dict.fromkeys(failed_checks) if c in FIXES] or [OTHERWISE]
    return Unusable(cause, f"{'; '.join(fixes)}; then {again}")


__all__ = ["FIXES", "Unusable", "unusable"]
