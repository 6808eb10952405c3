"""What the next boots are for (the rung, cell or trial), for a target that names its jobs after it (slurm).

An operation says it just before it boots (`boot_unit("rung-3")`); a target reads it at start. It is a
context variable: cells booting at once each run in a task of their own and see their own.
"""

from __future__ import annotations

from contextvars import ContextVar

_UNIT: ContextVar[str | None] = ContextVar("redline_boot_unit", default=None)


def boot_unit(unit: str) -> None:
    """The rung, cell or trial the next boots of this task are for."""
    _UNIT.set(unit)


def current_unit() -> str | None:
    return _UNIT.get()
