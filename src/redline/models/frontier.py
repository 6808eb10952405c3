"""frontier.yml: per model, hardware and engine version, the levers tried (the run, its outcome, why a refuted one
lost) and the levers not yet tried, best expected gain per cost first. Kept by ab_run; read by lever_frontier and
by champion_select, whose next levers leave out what an A/B already judged."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from redline.models.lever import Lever
from redline.models.strict import Strict

TriedOutcome = Literal["improvement", "no_improvement", "regression", "mixed", "untestable", "draft"]
JUDGED: frozenset[str] = frozenset({"improvement", "no_improvement", "regression", "mixed"})  # a VERDICT said so


class TriedUnder(Strict):
    """Where a lever was tried: its verdict holds there, not beyond (policy/frontier.py `covers`). A lever refuted
    eager at c <= 128 on short prompts may still win under CUDA graphs, or where the KV cache binds."""

    graphs: Literal["eager", "graphs"] = Field(description="how the trials ran: eager or CUDA graphs")
    top_concurrency: int = Field(ge=1, description="the highest concurrency benched")
    tokens_per_request: int | None = Field(None, description="the longest workload's tokens per request")


class TriedLever(Strict):
    lever: str = Field(description="the lever's name (policy/levers.py), or the knob that changed")
    change: str = Field(description="what the arm changed against the baseline, in serve-config terms")
    run: str = Field(description="the A/B and arm that tried it: ab/<name>.yml, arm <arm>")
    outcome: TriedOutcome = Field(description="the A/B's outcome for that arm; draft: the A/B was not a VERDICT")
    why: str = Field(description="why: the verdict's words for the arm (why it lost, when it did)")
    under: TriedUnder | None = Field(
        None, description="where it was tried; null (an older record): its verdict is taken to hold everywhere"
    )
    at: datetime


class Frontier(Strict):
    model: str
    hardware: str
    engine: str
    engine_version: str | None
    tried: list[TriedLever] = []
    untried: list[Lever] = Field([], description="not judged yet, best expected gain per cost first (predictions)")
    updated_at: datetime


class FrontierFile(Strict):
    frontiers: list[Frontier] = []


class FrontierList(Strict):
    """lever_frontier's answer: the workspace's frontiers (or one model's), and what each says to do next."""

    path: str
    frontiers: list[Frontier]
    next: list[str] = Field(description="per frontier: its top untried lever, or why nothing is left")


__all__ = ["JUDGED", "Frontier", "FrontierFile", "FrontierList", "TriedLever", "TriedOutcome", "TriedUnder"]
