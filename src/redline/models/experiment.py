"""What every experiment says, once: the fields a campaign (campaign.yml) and an A/B (ab/<name>.yml) share.

An experiment boots serve configs on one target (a campaign's cells, an A/B's arms), each by the one measurement
loop, benched on the same workloads at the same concurrencies, and judges them against its baseline. What differs is
how it chooses what to boot (a grid or a search; interleaved trials) and how it judges (a champion under an SLA; a
verdict by the rigor rules): models/campaign.py and models/ab.py add those.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from redline.engines.names import DEFAULT_ENGINE, EngineName
from redline.models.bench import Count
from redline.models.slug import Slug
from redline.models.strict import Strict
from redline.models.workloads import (
    COMBINE_HELP,
    Combine,
    NamedWorkloads,
    Workloads,
    WorkloadSpec,
    unique_concurrencies,
)

TargetName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=200)]


class ExperimentSpec(Strict, NamedWorkloads):
    """The fields every experiment has: its name, target, engine, baseline, workloads, concurrencies, warm-up and
    deadlines."""

    name: Slug
    target: TargetName = Field(description="a name in the targets file")
    engine: EngineName = DEFAULT_ENGINE
    baseline: Slug | None = Field(None, description="the config the others are set against")
    workload: WorkloadSpec | None = Field(None, description="what every bench sends (or workloads:)")
    workloads: Workloads | None = None
    combine: Combine = Field("each", description=COMBINE_HELP)
    concurrencies: Annotated[
        list[Count],
        Field(max_length=32, description="what every bench runs at, where a workload names none of its own"),
    ] = []
    warmup_requests: Annotated[int, Field(ge=0, le=1 << 20, description="sent before the first bench; 0: cold")] = 8
    boot_deadline_s: Annotated[float, Field(gt=0, le=86400)] = 3600
    bench_deadline_s: Annotated[float, Field(gt=0, le=86400)] = 3600

    @field_validator("concurrencies")
    @classmethod
    def _unique(cls, values: list[int]) -> list[int]:
        return unique_concurrencies(values)

    @model_validator(mode="after")
    def _workloads_said_once(self) -> ExperimentSpec:
        self.check_workloads()
        return self


__all__ = ["ExperimentSpec", "TargetName"]
