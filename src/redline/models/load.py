"""A workload's load points: closed loop at a concurrency, open loop at a request rate, or a trace's own arrivals sped
up (`Load`); how each is said in prose, in a file name, and in order.

    Load(concurrency=16).label    # c=16        .tag  c16
    Load(rate=4).label            # 4 req/s     .tag  r4
    Load(speedup=2).label         # x2 arrivals .tag  x2
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, NamedTuple

from pydantic import AfterValidator, Field

MAX_RATE = 10_000.0  # requests/s: past any one server
RATE_DECIMALS = 3
MAX_SPEEDUP = 1000.0


def _decimals(value: float) -> float:
    if round(value, RATE_DECIMALS) != value:
        raise ValueError(f"{value!r}: give it with at most {RATE_DECIMALS} decimals")
    return value


Rate = Annotated[
    float,
    Field(ge=10**-RATE_DECIMALS, le=MAX_RATE, allow_inf_nan=False, description="requests/s"),
    AfterValidator(_decimals),
]
Speedup = Annotated[
    float,
    Field(ge=10**-RATE_DECIMALS, le=MAX_SPEEDUP, allow_inf_nan=False, description="x its own pace (1: as recorded)"),
    AfterValidator(_decimals),
]


class Load(NamedTuple):
    """One load point of a workload: closed loop at a concurrency (that many requests in flight), open loop at a
    request rate (requests sent at that mean rate, whatever the server does), or a trace's own arrivals replayed
    `speedup` times faster (1: as recorded)."""

    concurrency: int | None = None
    rate: float | None = None
    speedup: float | None = None

    @property
    def label(self) -> str:
        """As prose and tables say it: c=16, 4 req/s, x2 arrivals."""
        if self.speedup is not None:
            return f"x{self.speedup:g} arrivals"
        return f"{self.rate:g} req/s" if self.rate is not None else f"c={self.concurrency}"

    @property
    def tag(self) -> str:
        """As a file name says it: c16, r4, r0.5, x2."""
        if self.speedup is not None:
            return f"x{self.speedup:g}"
        return f"r{self.rate:g}" if self.rate is not None else f"c{self.concurrency}"

    @property
    def order(self) -> tuple[int, float]:
        """Concurrencies first, then rates, then a trace's arrivals, each ascending."""
        if self.speedup is not None:
            return (2, self.speedup)
        return (1, self.rate) if self.rate is not None else (0, float(self.concurrency or 0))

    @property
    def open_loop(self) -> bool:
        """Sent whatever the server does: at a rate, or at a trace's arrivals."""
        return self.rate is not None or self.speedup is not None


def load_of(point: object) -> Load:
    """The load point of anything that says one (a result, a bench's workload, a table row)."""
    rate, speedup = getattr(point, "rate", None), getattr(point, "speedup", None)
    closed = rate is None and speedup is None
    return Load(getattr(point, "concurrency", None) if closed else None, rate, speedup)


KINDS = {  # each kind of load point in prose, one and several
    0: ("concurrency", "concurrencies"),
    1: ("request rate", "request rates"),
    2: ("speedup of the trace's arrivals", "speedups of the trace's arrivals"),
}


def kind_said(points: Iterable[Load]) -> tuple[str, str]:
    """What the points are, one and several, where they are all of one kind (none: concurrencies); of several kinds,
    load points."""
    kinds = {p.order[0] for p in points} or {0}
    return KINDS[kinds.pop()] if len(kinds) == 1 else ("load point", "load points")


def unique_rates(values: list[float]) -> list[float]:
    """Rates (or speedups) in order, each given once (ValueError otherwise)."""
    if len(set(values)) != len(values):
        raise ValueError(f"each once: {values}")
    return sorted(values)


__all__ = ["MAX_RATE", "RATE_DECIMALS", "Load", "Rate", "Speedup", "kind_said", "load_of", "unique_rates"]
