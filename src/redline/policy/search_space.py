"""A search's space: its cells as the levers each sets, with what a cell of the engine's defaults runs with filled in.
Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from redline.models.boot import BootSignals
from redline.models.serve import ServeConfig


@dataclass(frozen=True)
class Candidate:
    """A cell of the space: its name and the value each lever takes in it."""

    name: str
    levers: Mapping[str, object]


def lever_key(lever: str, value: object) -> str:
    """One lever value, as the model and the failed values name it: `lever=value` (the value's repr)."""
    return f"{lever}={value!r}"


def as_run(cell: Candidate, serve: ServeConfig, signals: BootSignals | None, space: Sequence[Candidate]) -> Candidate:
    """A cell with the levers it leaves unset (a campaign's cell of the engine's defaults) as it runs, where other
    cells of the space set them: its serve config's value (kv_cache_dtype unset: auto, the engines' own default);
    else, once booted, what its boot log says it ran with (max_num_batched_tokens). The model then learns from that
    cell, and predicts it, as it does a grid cell."""
    config = serve.model_dump()
    filled: dict[str, object] = {}
    for lever in sorted({lv for c in space for lv in c.levers} - set(cell.levers)):
        value = config.get(lever)
        if lever == "kv_cache_dtype" and value is None:
            value = "auto"
        if lever == "max_num_batched_tokens" and value is None and signals is not None:
            value = signals.max_num_batched_tokens
        if value is not None:
            filled[lever] = value
    return Candidate(cell.name, {**cell.levers, **filled}) if filled else cell


__all__ = ["Candidate", "as_run", "lever_key"]
