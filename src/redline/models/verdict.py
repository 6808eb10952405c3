"""What the A/B rules decide: each rule held or broken, each arm against the baseline, VERDICT or DRAFT."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from redline.models.metrics import MetricFlag, NoiseJudgement
from redline.models.strict import Strict

Rigor = Literal["VERDICT", "DRAFT"]
Claim = Literal["throughput", "latency"]
Outcome = Literal["improvement", "regression", "no_improvement", "untestable"]
# The rules, in the order they are checked and reported (METHODOLOGY.md, "Verdicts").
Rule = Literal[
    "same_node",
    "min_trials",
    "matched_cache",
    "matched_graphs",
    "matched_prefix_caching",
    "same_workload",
    "metric_isolated",
    "named_baseline",
]
RULES: tuple[Rule, ...] = get_args(Rule)


class RuleCheck(Strict):
    rule: Rule
    held: bool
    why: str


class WelchFigures(Strict):
    t: float | None = Field(description="(arm - baseline) / standard error; null: infinite (no spread, means differ)")
    df: float
    p_value: float


class Comparison(Strict):
    """One arm against the baseline at one concurrency, on the claim's metric."""

    arm: str
    baseline: str
    workload: str | None = Field(None, description="which named workload; null: the A/B's only one")
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop point's request rate asked (requests/s)")
    speedup: float | None = Field(None, description="a trace point's speedup of its own arrivals")
    metric: str
    direction: Literal["higher", "lower"]
    baseline_mean: float | None
    baseline_std: float | None
    arm_mean: float | None
    arm_std: float | None
    n: tuple[int, int] = Field(description="trials behind (baseline, arm)")
    delta_pct: float | None = Field(description="better than the baseline by this much (negative: worse)")
    welch: WelchFigures | None
    alpha: float
    outcome: Outcome
    why: str
    noise: NoiseJudgement | None = Field(
        None, description="the noise model's judgement: its basis, band and smallest detectable effect"
    )


class ArmOutcome(Strict):
    arm: str
    outcome: Literal["baseline", "improvement", "regression", "mixed", "no_improvement", "untestable"]
    why: str


class AbVerdict(Strict):
    """VERDICT only when every rule held; a DRAFT lists each rule that failed."""

    rigor: Rigor
    failed: list[Rule] = Field(description="the rules that did not hold; empty for a VERDICT")
    rules: list[RuleCheck]
    test: str = Field(description="the statistical test and its level")
    claim: Claim
    metric: str
    baseline: str | None = Field(description="the named baseline; null: none was named (a DRAFT)")
    compared_with: str = Field(description="the arm the others were compared with")
    arms: list[ArmOutcome]
    champion: str | None = Field(description="the arm that improved on the baseline by the test (null: none did)")
    outcome: Literal["improvement", "no_improvement", "regression", "untestable", "per_workload"]
    comparisons: list[Comparison]
    summary: str
    detectable: str | None = Field(
        None, description="the smallest effect the comparisons could detect (alpha, 80% power), largest first"
    )
    flags: list[MetricFlag] = Field([], description="implausible figures: named, never claimed on")
    fell_back: str | None = Field(None, description="why the claim rests on another metric than the one named")
    workload: str | None = Field(None, description="the one workload this verdict judges; null: all of them")
    workloads: list[AbVerdict] = Field(
        [], description="one verdict per named workload, each by its own test; this one combines them (combine)"
    )


__all__ = [
    "AbVerdict",
    "ArmOutcome",
    "Claim",
    "Comparison",
    "Outcome",
    "RULES",
    "Rigor",
    "Rule",
    "RuleCheck",
    "WelchFigures",
]
