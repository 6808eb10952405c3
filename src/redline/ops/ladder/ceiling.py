"""A ladder's ceiling recorded: the rung the route says to keep, the command that boots it, what its knobs cost in
KV tokens (each knob's share measured, or said as unknown: policy/tradeoff.py), and the headroom a higher
utilisation would buy."""

import shlex
from datetime import UTC, datetime
from pathlib import Path

from redline.engines import get_engine
from redline.ledger import Change, set_ceiling, update_ladder
from redline.models.ladder import Ceiling, Ladder, Rung
from redline.ops.ladder.record import not_now
from redline.policy import next_step
from redline.policy.rungs import is_good, proof
from redline.policy.signal import headroom, kv_tokens
from redline.policy.tradeoff import tradeoff


def lowest(ladder: Ladder, rung: Rung, proven_by: list[int]) -> Rung:
    """Of the boots that prove the ceiling, the one with the smallest KV cache (a cold compile's, where the config
    booted cold and warm): what a deployment can count on."""
    c = ladder.min_concurrency
    boots = [ladder.rungs[i - 1] for i in proven_by if is_good(ladder.rungs[i - 1], c)] or [rung]
    return min(boots, key=lambda r: (kv_tokens(r) is None, kv_tokens(r) or 0))


def ceiling_of(ladder: Ladder, rung: Rung, reason: str, proven_by: list[int]) -> Ceiling:
    """The ceiling a rung proves: its knobs, its KV figures (the lowest of its boots'), the torch.compile cache they
    were booted on, the command to paste, what more memory would buy."""
    kept = lowest(ladder, rung, proven_by)
    return Ceiling(
        max_model_len=rung.serve.max_model_len,
        max_num_batched_tokens=rung.serve.max_num_batched_tokens or ladder.floor.max_num_batched_tokens,
        kv_cache_tokens=kv_tokens(kept),
        max_concurrency=kept.signals.max_concurrency,
        proven_by=proven_by,
        compile_cache=kept.signals.compile_cache,
        serve_command=shlex.join(get_engine(ladder.engine).serve_argv(rung.serve)),
        headroom=headroom(rung, ladder.fixed.gpu_memory_utilization),
        tradeoff=tradeoff(ladder, rung),
        reason=reason,
        recorded_at=datetime.now(UTC),
    )


def ceiling_change(ladder: Ladder) -> Change[Ceiling]:
    """The ladder with its ceiling set, when the route says to record it."""
    step = next_step(ladder)
    if step.route != "record_ceiling" or step.rung_index is None:
        raise not_now(step, "record_ceiling")
    rung = ladder.rungs[step.rung_index - 1]
    ceiling = ceiling_of(ladder, rung, step.reason, proof(ladder, rung))
    return Change(set_ceiling(ladder, ceiling), ceiling)


def ceiling_record(path: str | Path) -> Ceiling:
    """Record the ceiling the climb found; refused while the route says anything but record_ceiling."""
    return update_ladder(Path(path), ceiling_change)


__all__ = ["ceiling_change", "ceiling_of", "ceiling_record"]
