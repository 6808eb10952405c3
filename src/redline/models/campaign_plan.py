"""A campaign's plan: every boot and bench a run would do, cell by cell, after the gates; and what the memory model
predicts of each cell before it boots."""

from typing import Any

from pydantic import Field

from redline.models.campaign import Focus, Verdict
from redline.models.context import RegimeLabel
from redline.models.planned import CellPrediction, PlannedConfig, Submits
from redline.models.search import SearchState
from redline.models.strict import Strict


class PlannedBench(Strict):
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop bench's request rate (requests/s)")
    speedup: float | None = Field(None, description="a trace bench at its own arrivals, this many times faster")
    repeat: int
    num_prompts: int
    result_file: str = Field(description="in the cell's folder")
    command: list[str]


class CellPlan(PlannedConfig):
    """One cell as it will boot (models/planned.py), with its levers, its regime and every command in order."""

    index: int
    levers: dict[str, Any]
    regime: RegimeLabel
    warmup_command: list[str] | None
    benches: list[PlannedBench]
    done: Verdict | None = Field(None, description="green or red: a verdict exists, a run skips this cell")


class CampaignPlan(Strict):
    """Every boot and bench a run would do, in order; nothing is started to make it."""

    campaign: str
    path: str
    target: str
    engine: str = Field(description="the campaign's engine: each cell's unless the cell names another")
    engines: list[str] = Field(description="every engine the cells boot; more than one: a comparison across engines")
    focus: Focus
    baseline: str
    concurrencies: list[int]
    bench_client: str = Field(description="the one client that benches every cell, of every engine")
    bench_backend: str | None = Field(description="the backend every cell's bench pins; null where cells differ")
    gates: list[str] = Field(description="campaign-wide gate notes")
    cells: list[CellPlan]
    boots: int = Field(
        description="boots a run would do now: one per cell without a verdict (a search: at most its budget left)"
    )
    benches: int
    replicates: int = Field(
        0, description="replicate boots a run may add at most: the top cells booted again, to measure the noise"
    )
    search: SearchState | None = Field(None, description="the search: its budget, spend, proposals, stop, resume")
    parallel: int = Field(1, description="cells run at once, each on a server of its own")
    noise: str = Field(
        "",
        description="the noise band the cells will be judged by and where it comes from: measured between the top "
        "cells' replicate boots, from earlier boots of this setup, or assumed (a warning, with what a replicate "
        "costs); and whether it leaves the campaign blind",
    )
    note: str = "the bench commands write into the server's run folder on the target, shown as $RUN_DIR"


__all__ = ["PlannedBench", "CampaignPlan", "CellPlan", "CellPrediction", "Submits"]
