"""`boundary:` in a campaign (focus goodput): inside each cell's one boot, after its listed concurrencies (or rates),
the highest concurrency (or request rate, `by: rate`) whose SLA holds, found by probing (policy/load_boundary.py); and
what a cell's verdict says of it."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

MAX_REPEATS = 4  # a probe whose repeats still disagree after this many counts as failed (unstable)
BISECTIONS = 6  # from a doubling's failure down to 5% of the boundary: log2(20) rounds up to 5, one more for safety
# Rates bisect to 5% too, but their doubling may start far under the boundary: a few more steps.
Axis = Literal["concurrency", "rate"]


class BoundarySpec(BaseModel):
    """Where the probes may go and how many benches each load gets before its verdict counts."""

    model_config = ConfigDict(extra="forbid")

    by: Axis = Field(
        "concurrency",
        description="what is probed: concurrency (closed loop, requests in flight) or rate (open loop, requests/s)",
    )
    lowest: Annotated[
        float, Field(ge=0.001, le=1 << 16, allow_inf_nan=False, description="the first concurrency (or rate) probed")
    ] = 1
    highest: Annotated[
        float,
        Field(
            gt=0.001,
            le=1 << 16,
            allow_inf_nan=False,
            description="no probe above it; by concurrency, max_num_seqs is raised to it",
        ),
    ] = 256
    repeats: Annotated[
        int,
        Field(
            ge=1,
            le=MAX_REPEATS,
            validation_alias=AliasChoices("repeats", "replicates"),  # `replicates` in files written before
            description="benches per probed concurrency that must agree",
        ),
    ] = 2

    @model_validator(mode="after")
    def _ordered(self) -> BoundarySpec:
        if self.lowest >= self.highest:
            raise ValueError(f"boundary: lowest {self.lowest:g} must be under highest {self.highest:g}")
        if self.by == "concurrency" and not (float(self.lowest).is_integer() and float(self.highest).is_integer()):
            raise ValueError("boundary: a concurrency is a whole number: give lowest and highest as such, or by: rate")
        if self.by == "rate" and (round(self.lowest, 3) != self.lowest or round(self.highest, 3) != self.highest):
            raise ValueError("boundary: give lowest and highest rates with at most 3 decimals (requests/s)")
        return self

    @property
    def most_benches(self) -> int:
        """The most benches a cell's probing may run: each doubling, each bisection, every repeat allowed."""
        doublings = math.ceil(math.log2(self.highest / self.lowest)) + 1
        return (doublings + BISECTIONS) * MAX_REPEATS


class LoadBoundary(BaseModel):
    """What one cell's probes found (measured): the highest concurrency whose SLA held, what binds above it."""

    model_config = ConfigDict(extra="forbid")

    by: Axis = Field("concurrency", description="what was probed: concurrency, or rate (requests/s)")
    finished: bool = Field(description="false: the probing stopped before it knew the boundary (see why)")
    concurrency: int | None = Field(
        None, description="the highest concurrency whose SLA held; null: not even the lowest (or probed by rate)"
    )
    rate: float | None = Field(None, description="by rate: the highest request rate whose SLA held")
    binding: str | None = Field(description="the SLA metric furthest over its limit at the first failing probe")
    cliff: bool = Field(description="the binding metric over 2x worse one probing step above the boundary")
    probes: int = Field(description="benches the boundary rests on, the listed concurrencies' included")
    why: str


__all__ = ["MAX_REPEATS", "Axis", "BoundarySpec", "LoadBoundary"]
