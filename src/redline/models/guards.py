"""An A/B's arms judged on every metric as perf_baseline_diff judges them (GREEN, YELLOW, RED), beside the A/B's verdict
on its one focus metric: a guarded metric (TPOT, ITL, TTFT) worse beyond its noise is named, not left to a diff."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from redline.models.baseline import Colour, MetricDiff


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuardedPoint(_Strict):
    """One workload and concurrency of an arm against the baseline arm: its colour and every metric's call."""

    workload: str | None = None
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop point's request rate asked (requests/s)")
    speedup: float | None = Field(None, description="a trace point's speedup of its own arrivals")
    colour: Colour
    why: str
    metrics: list[MetricDiff]


class ArmGuard(_Strict):
    """One arm against the baseline arm, judged as perf_baseline_diff would judge the same trials."""

    arm: str
    against: str = Field(description="the baseline arm")
    colour: Colour | None = Field(description="the worst point's colour; null: the two cannot be compared (why says)")
    why: str
    regressed: list[str] = Field(
        [], description="every guarded metric worse beyond its noise, where: '<metric> <change> at <workload> c=<c>'"
    )
    errors: str | None = Field(None, description="trials of the arm that failed where the baseline's did not")
    points: list[GuardedPoint] = []


__all__ = ["ArmGuard", "GuardedPoint"]
