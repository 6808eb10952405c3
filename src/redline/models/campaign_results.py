"""What a campaign leaves: one cell's verdict, the status, the aggregate table, the champion, the report.

Each cell leaves `cells/<cell>/verdict.yml` with its full context. A verdict is read back as untrusted input
(issue 19, class 7): every measured figure in it (a Stat's mean, std and values, an SLA's value, a boot's or a
cell's seconds) is a finite number from 0 to models/bench.py's bound, so a planted `.nan` or `-1` is refused
naming the field, by every reader, and never reaches a champion, a report or baselines.yml. The champion
is picked by the focus metric under the SLA, and it is always a DRAFT here: the
same-node A/B that makes a VERDICT is another tool.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, model_validator

from redline.models.bench import BenchResult, Figure
from redline.models.boot import BootSignals, BootStatus
from redline.models.campaign import Direction, Focus, Verdict
from redline.models.campaign_plan import CampaignPlan, CellPrediction
from redline.models.clean_bench import BenchCheck
from redline.models.context import ContextDescriptor, Workload
from redline.models.guards import GuardedPoint
from redline.models.legacy_context import legacy_context
from redline.models.lever import CloseStatus, Lever
from redline.models.load_boundary import LoadBoundary
from redline.models.metrics import MetricFlag, NoiseJudgement, Stat
from redline.models.search import SearchState
from redline.models.serve import ServeConfig
from redline.models.strict import Strict
from redline.models.telemetry import GpuTelemetry

# ---- one cell's verdict --------------------------------------------------------------------------------


class SlaCheck(Strict):
    metric: str
    limit: Figure
    kind: Literal["max", "min"]
    value: Figure | None
    ok: bool


class Repeat(Strict):
    """One bench of a cell at one concurrency, on its one boot (a campaign's `repeats` bench each concurrency again)."""

    repeat: int = Field(  # `trial` in verdicts written before the word was an A/B boot's alone
        validation_alias=AliasChoices("repeat", "trial"), description="which bench at its concurrency: 1, then repeats"
    )
    warm: bool = Field(description="the server had served requests before this bench")
    result_file: str | None
    figures: BenchResult | None
    server_healthy_after: bool
    exit_code: int
    client: str | None = Field(
        None, description="the bench client that ran it: one of its own, or the server's resident one (its version)"
    )
    checks: list[BenchCheck] = Field(
        [],
        description="the clean-bench checks (prefix cache, client, window, GPU); one failed: the trial is not ranked",
    )
    telemetry: GpuTelemetry | None = Field(
        None, description="the GPUs sampled beside the bench (nvidia-smi), where its host has the tools"
    )
    log_lines: Annotated[list[str], Field(max_length=50)] = []


class ConcurrencyResult(Strict):
    """One load point of a cell (a concurrency, or a request rate) over its repeats: the figures, the SLA, the
    problems."""

    workload: str | None = Field(None, description="which named workload (CellVerdict.workloads); null: the only one")
    concurrency: int | None = Field(None, description="closed loop: requests in flight; null: an open-loop point")
    rate: float | None = Field(None, description="open loop: the request rate asked (requests/s); null: closed loop")
    speedup: float | None = Field(None, description="a trace at its own arrivals, this many times faster")
    num_prompts: int
    ok: bool = Field(description="every trial completed every request and the server stayed healthy")
    reason: str | None = None
    metrics: dict[str, Stat] = {}
    sla: list[SlaCheck] = []
    sla_ok: bool = True
    repeats: list[Repeat] = Field([], validation_alias=AliasChoices("repeats", "trials"))  # `trials` written before

    @model_validator(mode="after")
    def _one_load(self) -> "ConcurrencyResult":
        if sum(x is not None for x in (self.concurrency, self.rate, self.speedup)) != 1:
            raise ValueError("a result is at a concurrency, a rate or a trace's arrivals sped up: give one")
        return self


class BootRecord(Strict):
    status: BootStatus
    reason: str
    boot_s: Figure | None
    log_file: str | None
    signals: BootSignals


class Commands(Strict):
    boot: list[str]
    warmup: list[str] | None = None
    bench: list[list[str]] = []


class CellVerdict(Strict):
    """cells/<cell>/verdict.yml: one cell's boot, its figures per concurrency, and whether it held (a replicate's:
    cells/<cell>.boot<k>/verdict.yml)."""

    schema_version: Literal[1] = 1
    campaign: str
    cell: str
    replicate: int = Field(
        1,
        ge=1,
        le=64,
        description="which boot of the cell: 1 its first; 2 and on, a fresh boot that measures the "
        "boot-to-boot spread the champion is judged by",
    )
    index: int
    baseline: bool
    levers: dict[str, Any]
    verdict: Verdict
    reason: str
    gates: list[str] = []
    widened: list[str] = []
    boot: BootRecord
    predicted: CellPrediction | None = Field(None, description="the cell's KV cache as the plan predicted it")
    drift: str | None = Field(None, description="the boot's KV cache outside that band, by how much; null inside")
    results: list[ConcurrencyResult] = []
    workloads: dict[str, Workload] = Field(
        {}, description="each named workload's shape, where the cell was benched on several (its results name one)"
    )
    boundary: LoadBoundary | None = Field(
        None, description="the load boundary its probes found (campaign boundary:), the listed concurrencies' included"
    )
    commands: Commands
    context: ContextDescriptor = Field(description="the cell's context; context_at(result) is one concurrency's")
    started_at: datetime
    ended_at: datetime
    wall_s: Figure

    @model_validator(mode="before")
    @classmethod
    def _one_context_model(cls, data: Any) -> Any:
        """A verdict written before the one context model still reads: its context becomes a descriptor."""
        ctx = data.get("context") if isinstance(data, dict) else None
        if isinstance(ctx, dict) and "bench_client" in ctx:
            return {**data, "context": legacy_context(ctx)}
        return data

    @model_validator(mode="after")
    def _workloads_named(self) -> "CellVerdict":
        for i, r in enumerate(self.results):
            if r.workload is not None and r.workload not in self.workloads:
                raise ValueError(
                    f"results[{i}].workload: {r.workload!r} is not one of its workloads ({', '.join(self.workloads)})"
                )
        return self

    def context_at(self, result: ConcurrencyResult) -> ContextDescriptor:
        """The context of the figures at one concurrency: the cell's, with that bench's exact shape (its workload's)."""
        shape = self.workloads[result.workload] if result.workload is not None else self.context.workload
        at = {"concurrency": result.concurrency, "rate": result.rate, "num_prompts": result.num_prompts}
        at |= {"speedup": result.speedup} if result.speedup is not None else {}
        workload = shape.model_copy(update=at)
        return self.context.model_copy(update={"workload": workload})

    def of_workload(self, name: str | None) -> "CellVerdict":
        """The verdict as one workload's: its results only, its shape in the context (None: the only one)."""
        if name is None:
            return self
        shape = self.workloads.get(name, Workload(name=name))  # a boot that failed benched none
        results = [r for r in self.results if r.workload == name]
        return self.model_copy(
            update={"results": results, "context": self.context.model_copy(update={"workload": shape})}
        )


# ---- status, aggregate, champion --------------------------------------------------------------------


class CellState(Strict):
    cell: str
    state: Literal["green", "red", "running", "pending"]
    reason: str | None = None


class CampaignStatus(Strict):
    campaign: str
    path: str
    results: str = Field(description="the results folder: cells/<cell>/verdict.yml, report.md")
    total: int
    done: int
    green: int
    red: int
    cells: list[CellState]
    running: list[str] = Field([], description="the cells whose servers a runner recorded as running")
    noise: str = Field("", description="the noise band the cells are judged by, and where it came from")
    search: SearchState | None = Field(None, description="the search: its budget, spend, proposals, stop, resume")
    next: str = Field(description="what to do next, in one sentence")


class TableRow(Strict):
    """One cell at one load point (a concurrency or a rate), with the focus metric and the guards beside it."""

    cell: str
    workload: str | None = Field(None, description="the named workload the row is of; null: the campaign's only one")
    concurrency: int | None = None
    rate: float | None = Field(None, description="an open-loop row's request rate asked (requests/s)")
    speedup: float | None = Field(None, description="a trace row at its own arrivals, this many times faster")
    verdict: Verdict
    regime: str
    ok: bool
    sla_ok: bool
    focus_value: float | None = Field(
        description="the focus metric's mean: over the cell's boots where the noise "
        "was measured between boots, else over its benches on one boot"
    )
    focus_std: float | None
    focus_n: int | None = Field(None, description="the boots (or benches) behind focus_value")
    output_throughput: float | None
    output_throughput_per_gpu: float | None
    tokens_per_s_per_user: float | None
    median_ttft_ms: float | None
    p99_ttft_ms: float | None
    median_tpot_ms: float | None
    median_itl_ms: float | None
    failed: int | None
    num_prompts: int
    sent_rate: float | None = Field(None, description="an open-loop row: the rate its client sent (requests/s)")
    goodput_requests: float | None = Field(None, description="requests/s that met the per-request SLO")
    goodput_output_throughput: float | None = Field(None, description="their output tokens/s")


class CampaignTable(Strict):
    campaign: str
    focus: Focus
    focus_metric: str
    direction: Direction
    concurrencies: list[int]
    rates: list[float] = Field([], description="the request rates of its open-loop rows, after the concurrencies")
    speedups: list[float] = Field([], description="the speedups of its trace rows at their own arrivals, last")
    cells: list[str]
    missing: list[str] = Field(description="cells without a verdict yet")
    rows: list[TableRow]


class RankedCell(Strict):
    cell: str
    engine: str | None = Field(None, description="the engine the cell booted; null for a cell with no verdict")
    regime: str
    score: float | None = Field(description="the focus metric that ranks the cell (see ChampionReport.scoring)")
    at_concurrency: int | None = None
    at_rate: float | None = Field(None, description="the request rate its score came from (an open-loop point)")
    at_speedup: float | None = Field(None, description="the trace speedup its score came from")
    delta_pct: float | None = Field(None, description="better than the baseline by this much (negative: worse)")
    noise_band_pct: float | None = None
    band_source: Literal["trials", "measured", "earlier", "default", "campaign"] | None = None
    outcome: Literal["baseline", "win", "mixed", "no_improvement", "worse", "not_ranked", "excluded"] = Field(
        description="win, worse, no_improvement: the score's call; mixed: a win on the score, but a point's figure "
        "worse beyond the noise (RED, as perf_baseline_diff judges it), so never the champion"
    )
    why: str
    noise: NoiseJudgement | None = Field(
        None, description="the noise model's judgement against the baseline: basis, band, smallest detectable effect"
    )
    flags: list[MetricFlag] = Field([], description="this cell's implausible figures: named, never ranked on")
    colour: Literal["GREEN", "YELLOW", "RED"] | None = Field(
        None, description="every metric at every point against the baseline cell, as perf_baseline_diff judges it"
    )
    regressed: list[str] = Field([], description="each guarded metric worse beyond its noise, and where")
    compared: list[GuardedPoint] = Field([], description="each point's call on the focus and every guarded metric")


class RegimeGroup(Strict):
    regime: str
    cells: list[RankedCell]
    note: str


class ChampionReport(Strict):
    """The champion under the SLA, or "no improvement": always a DRAFT until an A/B confirms it."""

    campaign: str
    focus: Focus
    metric: str
    direction: Direction
    scoring: str = Field(description="how a cell's figures become its score")
    baseline: str
    regime: str | None = Field(None, description="the regime ranked: the baseline's")
    champion: str | None
    champion_engine: str | None = Field(
        None,
        description="the engine the champion booted: the engine that won; null without a champion (then the note says "
        "whether the baseline's engine won)",
    )
    engines: list[str] = Field([], description="the engines of the cells with a verdict; two or more: across engines")
    outcome: Literal["improvement", "no_improvement", "no_baseline", "no_results", "per_workload"]
    rigor: Literal["DRAFT"] = "DRAFT"
    note: str
    ranked: list[RankedCell]
    top: list[str]
    other_regimes: list[RegimeGroup] = []
    excluded: list[RankedCell] = []
    detectable: str | None = Field(
        None, description="the smallest effect the ranking could detect (alpha 0.05, 80% power), largest first"
    )
    flags: list[MetricFlag] = Field([], description="implausible figures of any cell: named, never ranked on")
    workload: str | None = Field(None, description="the one workload this report ranks on; null: all of them")
    combine: str | None = Field(None, description="how the workloads' reports (workloads) name one champion")
    workloads: list["ChampionReport"] = Field(
        [], description="one report per named workload, each ranked on that workload's figures alone"
    )
    # the close (ops/campaign/close.py): whether the champion is closed, and the next levers, last
    close: CloseStatus | None = Field(None, description="whether the champion is closed, and what is missing")
    next_levers: list[Lever] = Field([], description="what to try next, best expected gain per cost first")


# ---- tool results ------------------------------------------------------------------------------------


class CellOutcome(Strict):
    cell: str
    replicate: int = Field(1, description="which boot of the cell (2 and on: a replicate)")
    verdict: Verdict
    reason: str
    boot_s: float | None
    wall_s: float


class CampaignCreated(Strict):
    """campaign_init's answer: the file it wrote, and what every cell will boot, resolved as a run resolves it."""

    name: str = Field(description="the campaign's name (its results folder)")
    target: str
    base: ServeConfig = Field(
        description="the config every cell starts from, resolved: base.from_ladder's ceiling and fixed knobs (eager, "
        "port, flags, env) under the knobs base gives; a cell's levers and the gates go over it (plan.cells)"
    )
    base_from: str = Field(description="where the base came from, in one line")
    known_good: str = Field(
        description="what a run does with known-good.yml: no entry for the model, or the entries it has and that "
        "campaign_run applies the one matching the target's hardware and engine version (a dry run shows it applied)"
    )
    plan: CampaignPlan = Field(description="every cell as it will boot (its serve config, the gates, every command)")
    next: str


class CampaignRunResult(Strict):
    campaign: str
    dry_run: bool
    plan: CampaignPlan | None = Field(None, description="the commands, for a dry run")
    ran: list[CellOutcome] = []
    skipped: list[str] = Field([], description="cells that already had a verdict (a resumed campaign)")
    boots: int = 0
    stopped_early: bool = False
    wall_s: float | None = Field(None, description="the run's wall time, from its start to its last cell's end")
    gpu_s: float | None = Field(
        None,
        description="the GPU time the cells held: each cell's wall time x the GPUs its serve config used (TP x PP x "
        "DP), summed; 0 where the host showed no GPU",
    )
    reason: str
    next: str
    failed: str | None = Field(
        None,
        description="why the run measured nothing usable (every cell it ran failed a clean-bench check): its job ends "
        "failed; next fixes it",
    )


__all__ = [
    "BootRecord",
    "CampaignCreated",
    "CampaignRunResult",
    "CampaignStatus",
    "CampaignTable",
    "CellOutcome",
    "CellState",
    "CellVerdict",
    "ChampionReport",
    "Commands",
    "ConcurrencyResult",
    "RankedCell",
    "RegimeGroup",
    "SlaCheck",
    "Stat",
    "TableRow",
    "Repeat",
]
