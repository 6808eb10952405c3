"""A campaign's search: how it chooses its next cell instead of booting the whole grid, what it may spend, when it
stops, and the log it keeps of each step (search.yml beside the verdicts)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from redline.models.strict import Strict

Finite = Annotated[float, Field(allow_inf_nan=False)]  # a figure read back from search.yml: never NaN or Infinity


class SearchSpec(Strict):
    """`search:` in a campaign file: the grid's cells become a space the search walks (policy/search.py)."""

    method: Literal["model"] = Field(
        "model",
        description="model: a Bayesian model over the levers (additive, interactions shrunk toward it) proposes the "
        "cell with the highest upper bound",
    )
    initial: Annotated[int, Field(ge=1, le=64, description="cells booted before the model proposes")] = 3
    budget_boots: Annotated[int | None, Field(ge=1, le=256, description="boots at most (null: the grid's size)")] = None
    budget_gpu_s: Annotated[
        float | None, Field(gt=0, le=1e7, description="GPU-seconds at most (cells' wall x GPUs)")
    ] = None
    patience: Annotated[
        int,
        Field(
            ge=1,
            le=64,
            description="stop after this many cells in a row (after the opening) that did not beat the best",
        ),
    ] = 3
    seed: Annotated[int, Field(ge=0, le=2**31, description="breaks ties between equal proposals")] = 0


class ProposalRecord(Strict):
    """One step of a search's log: the cell it proposed and why, or why it stopped."""

    step: Annotated[int, Field(ge=1)]
    at: datetime
    cell: str | None = Field(None, description="the cell proposed; null: the search stopped")
    why: str
    estimate: Finite | None = Field(None, description="the model's estimate of the cell's score (predicted)")
    upper: Finite | None = Field(None, description="its upper bound (predicted)")
    measured: Finite | None = Field(
        None,
        description="the score its verdict gave, once booted (signed: higher better; across several workloads, 1 plus "
        "the combined gain over the baseline)",
    )


class SearchLog(Strict):
    """search.yml: every step in order (append-only); a resumed search carries on after the last."""

    schema_version: Literal[1] = 1
    campaign: str
    steps: list[ProposalRecord] = []
    stopped: str | None = Field(None, description="why the search stopped; null while it runs")


class SearchState(Strict):
    """A search seen from outside (campaign_plan, a dry run, campaign_status): what it may spend, what it spent,
    what it proposed and why it stopped, as search.yml and the verdicts say; and what a resume would do."""

    budget_boots: int | None = Field(description="cells it may boot at most (null: the grid's size)")
    budget_gpu_s: float | None = Field(description="GPU-seconds it may spend at most (null: no limit)")
    booted: int = Field(description="cells with a verdict, of the grid (booted by the search or before it)")
    gpu_s: float = Field(description="the GPU-seconds those cells held (0 on a host that showed no GPU)")
    proposals: list[ProposalRecord] = Field(description="search.yml's steps, in order")
    stopped: str | None = Field(description="why it stopped; null while it may still propose")
    resume: str = Field(description="what campaign_run would do now")


__all__ = ["SearchLog", "SearchSpec", "SearchState", "ProposalRecord"]
