"""An A/B: two or more arms (serve configs) on one target, interleaved A B A B ..., a clean boot per arm per trial.

ab/<name>.yml                           the spec as run (comments kept); a re-run resumes it
ab/<name>/trials/<arm>-<k>/trial.yml    one trial: its node, boot, figures per concurrency; written last
ab/<name>/trials/<arm>-<k>/boot.log, bench-c<C>.json
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from redline.engines.names import EngineName
from redline.models.accuracy import AccuracyGate
from redline.models.bench import BenchResult, Figure
from redline.models.boot import BootStatus, CompileCache, ModelLoad
from redline.models.campaign import check_benches
from redline.models.campaign_results import Stat
from redline.models.clean_bench import BenchCheck
from redline.models.context import ContextDescriptor, Node
from redline.models.experiment import ExperimentSpec
from redline.models.guards import ArmGuard
from redline.models.known_good import KnownGoodUse
from redline.models.lever import CloseStatus, Lever
from redline.models.metrics import metric
from redline.models.planned import PlannedConfig
from redline.models.serve import ServeConfig
from redline.models.slug import Slug
from redline.models.sol import SolFigure
from redline.models.strict import Strict
from redline.models.telemetry import GpuTelemetry
from redline.models.verdict import AbVerdict, Claim

Metric = Literal[
    "output_throughput",
    "output_throughput_per_gpu",
    "total_token_throughput",
    "median_tpot_ms",
    "median_itl_ms",
    "median_ttft_ms",
]
# The figures every trial reports per concurrency (issue 11: median TPOT, ITL, TTFT and output throughput), each an
# entry of the one metric table (models/metrics.py: its direction and unit); a name it lacks fails at import.
TRIAL_METRICS = tuple(
    metric(name).name
    for name in (
        "median_tpot_ms",
        "median_itl_ms",
        "median_ttft_ms",
        "output_throughput",
        "output_throughput_per_gpu",
        "tokens_per_s_per_user",
        "sent_rate",  # an open-loop point's (a rate, a trace's arrivals): what its client sent, and its goodput
        "goodput_requests",
        "goodput_output_throughput",
    )
)


class ArmSpec(Strict):
    """One arm: a serve config given inline, or a campaign's cell named; booted by its engine."""

    name: Slug
    engine: EngineName | None = Field(
        None, description="the engine this arm boots; default: its campaign cell's, else the A/B's"
    )
    serve: ServeConfig | None = Field(None, description="the serve config, inline")
    campaign: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=1024,
            description=("a campaign file in the workspace whose cell this arm boots (with cell)"),
        ),
    ] = None
    cell: Slug | None = Field(None, description="the cell of that campaign")

    @model_validator(mode="after")
    def _one_way(self) -> ArmSpec:
        inline, named = self.serve is not None, self.campaign is not None or self.cell is not None
        if inline == named or (named and (self.campaign is None or self.cell is None)):
            raise ValueError(f"arm {self.name!r}: give serve (inline), or campaign and cell, not both")
        return self


class AbSpec(ExperimentSpec):
    """The A/B to run: its arms, the trials, the claim (and what every experiment says: models/experiment.py)."""

    arms: Annotated[list[ArmSpec], Field(min_length=2, max_length=8)]
    trials: Annotated[int, Field(ge=1, le=20, description="clean boots per arm; a VERDICT needs at least 3")] = 3
    claim: Claim = "throughput"
    metric: Metric | None = Field(
        None,
        description="the metric the claim rests on; default: output_throughput for "
        "throughput, median_tpot_ms for latency",
    )
    alpha: Annotated[float, Field(gt=0, lt=0.5, description="Welch's t-test level")] = 0.05

    @model_validator(mode="after")
    def _arms_differ(self) -> AbSpec:
        names = [a.name for a in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arms: two arms share a name: {sorted({n for n in names if names.count(n) > 1})}")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline: no arm is named {self.baseline!r}; the arms are {', '.join(names)}")
        check_benches(
            "trials",
            {"arms": len(self.arms), "trials": self.trials}
            | ({"workloads": len(self.workloads)} if self.workloads else {})
            | {"concurrencies": len(self.concurrencies)},
        )
        return self

    def same_run(self, other: AbSpec) -> bool:
        """The same A/B but (perhaps) more trials, or another rule across its workloads: what a resume may change."""
        return self.model_dump(exclude={"trials", "combine"}) == other.model_dump(exclude={"trials", "combine"})


# ---- the plan ----------------------------------------------------------------------------------------------


class ArmPlan(PlannedConfig):
    """One arm as it will boot (models/planned.py): an A/B's plan lists its arms so, each trial boots one of them."""


class TrialPlan(Strict):
    """One trial in run order: a clean boot of one arm, a warm-up, a bench per concurrency, a stop."""

    order: int
    arm: str
    trial: int
    folder: str
    boot_command: list[str]
    warmup_command: list[str] | None
    bench_commands: list[list[str]]
    done: bool = Field(False, description="its trial.yml exists: a run skips it")


class AbPlan(Strict):
    ab: str
    target: str
    engine: str = Field(description="the A/B's engine: each arm's unless the arm (or its campaign cell) names another")
    engines: list[str] = Field(description="every engine the arms boot; more than one: a comparison across engines")
    arms: list[ArmPlan]
    trials: list[TrialPlan]
    boots: int = Field(description="boots a run would do now: one per trial not done")
    gates: list[str] = Field([], description="A/B-wide gate notes: what the methodology gates changed, and why")
    known_good: KnownGoodUse
    note: str = "interleaved A B A B ...; bench commands write into each server's run folder, shown as $RUN_DIR"


# ---- one trial, on disk --------------------------------------------------------------------------------------


class TrialPoint(Strict):
    """One load point (a concurrency, a rate, a trace's arrivals; of one workload) of one trial: the bench's figures,
    in their exact context."""

    workload: str | None = Field(None, description="which named workload; null: the A/B's only one")
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop point's request rate asked (requests/s)")
    speedup: float | None = Field(None, description="a trace point's speedup of its own arrivals")
    num_prompts: int
    ok: bool
    problem: str | None = None
    result_file: str | None = None
    figures: BenchResult | None = None
    healthy_after: bool
    client: str | None = Field(
        None, description="the bench client that ran it: one of its own, or the server's resident one (its version)"
    )
    checks: list[BenchCheck] = Field(
        [],
        description="the clean-bench checks (prefix cache, client, window, GPU); one failed: the point is not ranked",
    )
    telemetry: GpuTelemetry | None = Field(
        None, description="the GPUs sampled beside the bench (nvidia-smi), where its host has the tools"
    )
    context: ContextDescriptor
    sol: SolFigure | None = Field(None, description="the output throughput against the decode ceiling")


class TrialRecord(Strict):
    """trials/<arm>-<k>/trial.yml: one clean boot of one arm and its benches; its presence means done."""

    schema_version: Literal[1] = 1
    ab: str
    arm: str
    trial: int
    order: int
    ok: bool
    reason: str
    target: str
    node: Node
    engine: str | None = Field(None, description="the engine the trial booted (null in older records: the A/B's)")
    engine_version: str | None
    serve: ServeConfig
    boot_status: BootStatus
    boot_reason: str
    boot_s: Figure | None
    model_load: ModelLoad | None = Field(None, description="how the boot loaded its weights, and what that proves")
    compile_cache: CompileCache | None = Field(
        None, description="the torch.compile cache the boot found: cold, warm or unused (null: not read)"
    )
    drift: str | None = Field(None, description="the boot's KV cache outside the arm's predicted band; null inside")
    warm: bool = Field(description="warm-up requests were sent before the first bench")
    warmup_error: str | None = None
    points: list[TrialPoint] = []
    commands: dict[str, Any] = {}
    started_at: datetime
    ended_at: datetime
    wall_s: Figure


# ---- the result -----------------------------------------------------------------------------------------------


class TrialFigures(Strict):
    """One trial's figures at one concurrency, as the summary shows them."""

    trial: int
    node: str
    median_tpot_ms: Figure | None = None
    median_itl_ms: Figure | None = None
    median_ttft_ms: Figure | None = None
    output_throughput: Figure | None = None
    sol_pct: Figure | None = Field(None, description="output throughput as % of the decode ceiling (sol.key)")


class ArmPoint(Strict):
    """One arm at one load point (of one workload): per trial and mean ± std, in its exact context, against its SoL
    ceiling."""

    workload: str | None = Field(None, description="which named workload; null: the A/B's only one")
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop point's request rate asked (requests/s)")
    speedup: float | None = Field(None, description="a trace point's speedup of its own arrivals")
    context: ContextDescriptor
    trials: list[TrialFigures]
    metrics: dict[str, Stat] = Field(description="mean ± std over the successful trials")
    sol: SolFigure


class ArmSummary(Strict):
    arm: str
    baseline: bool
    engine: str = Field(description="the engine the arm booted")
    serve: ServeConfig
    trials_ok: int
    trials_failed: list[str] = Field(description="<arm>-<k>: why, for each failed trial")
    points: list[ArmPoint]
    accuracy: AccuracyGate | None = Field(
        None,
        description="its accuracy gate against the baseline arm (a consistency check, not a benchmark score), where "
        "it turns on a lever that can change the model's answers; null: no such lever",
    )


class AbResult(Strict):
    """ab_run's answer: the plan (dry run), or the trials, the verdict and the next levers."""

    ab: str
    path: str
    dry_run: bool
    plan: AbPlan | None = None
    ran: list[str] = Field([], description="trials run by this call (<arm>-<k>)")
    skipped: list[str] = Field([], description="trials already done (a resumed A/B)")
    known_good: KnownGoodUse
    arms: list[ArmSummary] = []
    verdict: AbVerdict | None = None
    summary: str
    next: str
    failed: str | None = Field(
        None, description="why the A/B measured nothing usable (every trial failed): its job ends failed; next fixes it"
    )
    guards: list[ArmGuard] = Field(
        [],
        description="each arm against the baseline arm on every metric (focus and guarded: TPOT, ITL, TTFT), judged "
        "as perf_baseline_diff judges the same trials, with its colours; the summary names every guarded metric "
        "worse beyond its noise",
    )
    close: CloseStatus | None = None
    next_levers: list[Lever] = Field([], description="what to try next, best expected gain per cost first")
    frontier: str | None = Field(
        None, description="the lever frontier after this A/B (frontier.yml): what it says next"
    )


__all__ = [
    "AbPlan",
    "AbResult",
    "AbSpec",
    "ArmPlan",
    "ArmPoint",
    "ArmSpec",
    "ArmSummary",
    "Metric",
    "TRIAL_METRICS",
    "TrialFigures",
    "TrialPoint",
    "TrialRecord",
    "TrialPlan",
]
