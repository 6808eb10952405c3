"""`boundary:` in a campaign (focus goodput): inside each cell's one boot, after its listed concurrencies, the highest
concurrency whose SLA holds, found by probing (policy/load_boundary.py); and what a cell's verdict says of it."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

MAX_REPEATS = 4  # a probe whose repeats still disagree after this many counts as failed (unstable)
BISECTIONS = 6  # from a doubling's failure down to 5% of the boundary: log2(20) rounds up to 5, one more for safety


class BoundarySpec(BaseModel):
    """Where the probes may go and how many benches each concurrency gets before its verdict counts."""

    model_config = ConfigDict(extra="forbid")

    lowest: Annotated[int, Field(ge=1, le=1 << 16, description="the first concurrency probed")] = 1
    highest: Annotated[int, Field(ge=2, le=1 << 16, description="no probe above it; max_num_seqs is raised to it")] = (
        256
    )
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
            raise ValueError(f"boundary: lowest {self.lowest} must be under highest {self.highest}")
        return self

    @property
    def most_benches(self) -> int:
        """The most benches a cell's probing may run: each doubling, each bisection, every repeat allowed."""
        doublings = math.ceil(math.log2(self.highest / self.lowest)) + 1
        return (doublings + BISECTIONS) * MAX_REPEATS


class LoadBoundary(BaseModel):
    """What one cell's probes found (measured): the highest concurrency whose SLA held, what binds above it."""

    model_config = ConfigDict(extra="forbid")

    finished: bool = Field(description="false: the probing stopped before it knew the boundary (see why)")
    concurrency: int | None = Field(description="the highest concurrency whose SLA held; null: not even the lowest")
    binding: str | None = Field(description="the SLA metric furthest over its limit at the first failing probe")
    cliff: bool = Field(description="the binding metric over 2x worse one probing step above the boundary")
    probes: int = Field(description="benches the boundary rests on, the listed concurrencies' included")
    why: str


__all__ = ["MAX_REPEATS", "BoundarySpec", "LoadBoundary"]
