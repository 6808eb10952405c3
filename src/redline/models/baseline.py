"""baselines.yml and what a diff against a baseline says (GREEN, YELLOW, RED).

A baseline is a named, recorded result: one point per concurrency, each with its own full
context (its exact shape), its metrics (mean ± std over its trials) and its % of speed-of-light.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from redline.models.context import ContextDescriptor
from redline.models.metrics import Band, MetricFlag, NoiseJudgement, Stat
from redline.models.sol import SolFigure
from redline.models.strict import Strict

Colour = Literal["GREEN", "YELLOW", "RED"]
SourceKind = Literal["campaign_cell", "ab_arm", "bench_file", "baseline"]


class BaselineSource(Strict):
    """Where a result came from: a campaign cell, an A/B arm, a bench result file, or a recorded baseline."""

    kind: SourceKind
    ref: Annotated[
        str,
        Field(
            min_length=1, max_length=1024, description="the file (relative to the workspace), or the baseline's name"
        ),
    ]
    item: Annotated[str | None, Field(max_length=200, description="the cell or arm")] = None

    def describe(self) -> str:
        return f"{self.kind.replace('_', ' ')} {self.ref}" + (f" ({self.item})" if self.item else "")


class BaselinePoint(Strict):
    """One concurrency of a result: its context, its metrics, its % of the decode ceiling."""

    context: ContextDescriptor
    metrics: dict[str, Stat]
    sol: SolFigure | None = None


class Baseline(Strict):
    source: BaselineSource
    note: Annotated[str | None, Field(max_length=2000)] = None
    recorded_at: datetime
    points: Annotated[list[BaselinePoint], Field(min_length=1)]
    noise: dict[str, Band] = Field(
        {}, description="each metric's band measured between the boots behind the points (a campaign's replicates)"
    )


class BaselinesFile(Strict):
    schema_version: Literal[1] = 1
    baselines: dict[str, Baseline] = {}


class BaselineRecorded(Strict):
    name: str
    path: str
    replaced: bool = Field(description="a baseline of this name was there and is replaced")
    baseline: Baseline


class MetricDiff(Strict):
    metric: str
    role: Literal["focus", "guarded"]
    direction: Literal["higher", "lower"]
    baseline: Stat | None
    current: Stat | None
    delta_pct: float | None = Field(description="better than the baseline by this much (negative: worse)")
    status: Literal["improved", "within", "regressed", "regressed_loose", "missing", "flagged"] = Field(
        description="improved / regressed: better / worse beyond the noise (the noise model's call); "
        "regressed_loose: worse beyond the noise but inside the looser band; flagged: implausible, not judged"
    )
    noise: NoiseJudgement | None = Field(
        None, description="the noise model's judgement: its basis, band and smallest detectable effect"
    )


class PointDiff(Strict):
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop point's request rate asked (requests/s)")
    speedup: float | None = Field(None, description="a trace point's speedup of its own arrivals")
    colour: Colour
    why: str
    baseline_context: ContextDescriptor
    current_context: ContextDescriptor
    metrics: list[MetricDiff]
    baseline_sol: SolFigure | None = None
    current_sol: SolFigure | None = None
    flags: list[MetricFlag] = Field([], description="implausible figures on either side: named, never judged")


class BaselineDiff(Strict):
    """The current result against a baseline: GREEN, YELLOW or RED, each metric with both contexts."""

    baseline: str
    current: BaselineSource
    colour: Colour
    reason: str
    focus: str
    guarded: list[str]
    tolerance_pct: float
    loose_band_pct: float
    points: list[PointDiff]
    unmatched: list[str] = Field([], description="concurrencies only one side measured (not compared)")
    text: str = Field(description="the diff as printed: each metric with both contexts")


__all__ = [
    "Baseline",
    "BaselineDiff",
    "BaselinePoint",
    "BaselineRecorded",
    "BaselineSource",
    "BaselinesFile",
    "Colour",
    "MetricDiff",
    "PointDiff",
    "SourceKind",
]
