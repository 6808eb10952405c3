"""campaign.yml and what a campaign leaves: one cell's verdict, the aggregate table, the champion.

A campaign is a named grid of serve configs (cells) over one base config. Each
cell is booted once and benched with the engine's own client at every
concurrency on that one server; each leaves `cells/<cell>/verdict.yml` with its
full context. The champion is picked by the focus metric under the SLA, and it
is always a DRAFT here: the same-node A/B that makes a VERDICT is another tool.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from redline.engines import DEFAULT_ENGINE, check_engine_name
from redline.models.bench import BenchResult
from redline.models.boot import BootSignals, BootStatus
from redline.models.ladder import GpuProfile
from redline.models.serve import FLAG_RE, MODEL_RE, ServeConfig

Count = Annotated[int, Field(gt=0, le=1 << 26)]
Slug = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")]
TargetName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=200)]
Focus = Literal["throughput", "latency", "goodput"]
Verdict = Literal["green", "red"]
Direction = Literal["higher", "lower"]

# Every metric a campaign measures, and which way is better. An SLA on a "lower" metric is a maximum,
# on a "higher" one a minimum. Per GPU: divided by tensor x pipeline x data parallel size.
# Per user: 1000 / median TPOT, the decode speed one request sees.
METRICS: dict[str, Direction] = {
    "output_throughput": "higher",
    "output_throughput_per_gpu": "higher",
    "total_token_throughput": "higher",
    "request_throughput": "higher",
    "tokens_per_s_per_user": "higher",
    "median_ttft_ms": "lower",
    "p99_ttft_ms": "lower",
    "median_tpot_ms": "lower",
    "p99_tpot_ms": "lower",
    "median_itl_ms": "lower",
    "p99_itl_ms": "lower",
}
# The metric each focus ranks cells by (goodput: the best per-GPU throughput of a concurrency inside the SLA).
FOCUS_METRIC: dict[str, str] = {
    "throughput": "output_throughput_per_gpu",
    "latency": "median_tpot_ms",
    "goodput": "output_throughput_per_gpu",
}
GOODPUT_SLA = ("p99_ttft_ms", "median_tpot_ms")  # the limits that define goodput
# The levers a cell may set over the base config; every other knob is the base's, in every cell.
LEVERS = (
    "max_num_batched_tokens", "max_num_seqs", "kv_cache_dtype", "enforce_eager", "cudagraph_mode",
    "enable_chunked_prefill", "enable_prefix_caching", "extra_flags",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _flag(value: str) -> str:
    if not FLAG_RE.match(value):
        raise ValueError(f"{value!r} is not an engine flag: write it as --name or --name=value (lowercase name)")
    return value


Flag = Annotated[str, AfterValidator(_flag)]
Flags = Annotated[list[Flag], Field(max_length=64)]
Batched = Annotated[int, Field(gt=0, le=1 << 26)]
Seqs = Annotated[int, Field(gt=0, le=1 << 20)]
KvDtype = Annotated[str, Field(pattern=r"^[a-z0-9_]+$", max_length=32)]
GraphMode = Annotated[str, Field(pattern=r"^[A-Z_]+$", max_length=40)]


# ---- campaign.yml ----------------------------------------------------------------------------------


class Levers(_Strict):
    """What one cell sets over the base config; unset (null) keeps the base's value."""

    max_num_batched_tokens: Batched | None = None
    max_num_seqs: Seqs | None = None
    kv_cache_dtype: KvDtype | None = None
    enforce_eager: bool | None = None
    cudagraph_mode: GraphMode | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    extra_flags: Flags | None = None

    def set(self) -> dict[str, Any]:
        """The levers this cell sets, in LEVERS order."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class CellSpec(Levers):
    """A named cell: its levers over the base config."""

    name: Slug


def _values(kind: Any) -> Any:
    return Annotated[list[kind] | None, Field(min_length=1, max_length=32)]


class Grid(_Strict):
    """Values per lever; the cells are every combination, the first lever outermost."""

    max_num_batched_tokens: _values(Batched) = None
    max_num_seqs: _values(Seqs) = None
    kv_cache_dtype: _values(KvDtype) = None
    enforce_eager: _values(bool) = None
    cudagraph_mode: _values(GraphMode) = None
    enable_chunked_prefill: _values(bool) = None
    enable_prefix_caching: _values(bool) = None
    extra_flags: _values(Flags) = None

    def levers(self) -> dict[str, list[Any]]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class _BaseServeBase(_Strict):
    @model_validator(mode="after")
    def _valid_as_serve_config(self) -> "_BaseServeBase":
        knobs = self.model_dump(exclude={"from_ladder"}, exclude_none=True)
        if self.from_ladder is None and "max_model_len" not in knobs:  # type: ignore[attr-defined]
            raise ValueError("give max_model_len, or from_ladder: <ladder.yml> to take a ladder's recorded ceiling")
        ServeConfig.model_validate({"model": "m", "max_model_len": 1, **knobs})  # ServeConfig's own flag and env rules
        return self


def _base_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, field in ServeConfig.model_fields.items():
        if name == "model":
            continue
        if name == "max_model_len":
            fields[name] = (int | None, Field(None, gt=0, le=1 << 26))
        else:
            fields[name] = (field.annotation, field)
    fields["from_ladder"] = (str | None, Field(None, min_length=1, max_length=4096,
                                               description="a ladder.yml whose recorded ceiling is the base"))
    return fields


# Built from ServeConfig, so a knob added there is a base knob here without a second list to keep.
BaseServe = create_model(
    "BaseServe",
    __base__=_BaseServeBase,
    __doc__="The serve config every cell starts from: ServeConfig's knobs, or a ladder's ceiling plus these.",
    **_base_fields(),
)


class CampaignWorkload(_Strict):
    """What every bench sends: random prompts of fixed lengths; every request decodes output_len tokens."""

    dataset: Literal["random"] = "random"
    input_len: Count
    output_len: Count
    seed: int = 0
    num_prompts: Count | None = Field(None, description="prompts per concurrency; default 4 x c, never under 2 x c")
    ignore_eos: Literal[True] = Field(True, description="always: every cell decodes the same tokens")


class Campaign(_Strict):
    """campaign.yml: the grid, the workload and the focus of one tuning campaign."""

    schema_version: Literal[1] = 1
    name: Slug
    target: TargetName = Field(description="a name in the targets file")
    model: Annotated[str | None, Field(min_length=1, max_length=4096, pattern=MODEL_RE.pattern,
                                       description="path or hub id; taken from the ladder with base.from_ladder")] = None
    engine: Annotated[str, AfterValidator(check_engine_name)] = DEFAULT_ENGINE
    base: BaseServe  # type: ignore[valid-type]
    focus: Focus = "throughput"
    sla: dict[str, Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict, description="limits on named metrics: a maximum on *_ms, a minimum on throughputs")
    workload: CampaignWorkload
    concurrencies: Annotated[list[Count], Field(min_length=1, max_length=32)]
    warmup_requests: Annotated[int, Field(ge=0, le=1 << 20)] = 8
    trials: Annotated[int, Field(ge=1, le=20, description="benches per concurrency on the cell's one boot")] = 1
    bench_backend: Annotated[str | None, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=40,
                                               description="the bench client's backend; default: the engine's")] = None
    grid: Grid | None = None
    cells: list[CellSpec] = []
    baseline: Slug | None = Field(None, description="the cell others are compared with; default: the first")
    continue_on_red: bool = False
    noise_band_pct: Annotated[float | None, Field(gt=0, le=100)] = Field(
        None, description="below this difference a cell is no improvement; default: from trials, else 3%")
    boot_deadline_s: Annotated[float, Field(gt=0, le=86400)] = 3600
    bench_deadline_s: Annotated[float, Field(gt=0, le=86400)] = 3600

    @field_validator("sla")
    @classmethod
    def _sla_metrics_exist(cls, sla: dict[str, float]) -> dict[str, float]:
        for metric in sla:
            if metric not in METRICS:
                raise ValueError(f"no metric {metric!r}; metrics are {', '.join(METRICS)}")
        return sla

    @field_validator("concurrencies")
    @classmethod
    def _unique(cls, values: list[int]) -> list[int]:
        if len(set(values)) != len(values):
            raise ValueError(f"each concurrency once: {values}")
        return sorted(values)

    @model_validator(mode="after")
    def _consistent(self) -> "Campaign":
        if not self.cells and (self.grid is None or not self.grid.levers()):
            raise ValueError("grid: empty: give at least one lever with values under grid, or cells")
        if self.model is None and self.base.from_ladder is None:
            raise ValueError("model: give the model (a path or hub id), or base.from_ladder to take the ladder's")
        names = [c.name for c in self.cells]
        if len(set(names)) != len(names):
            raise ValueError(f"cells: two cells share a name: {sorted({n for n in names if names.count(n) > 1})}")
        if self.focus == "goodput" and not any(m in self.sla for m in GOODPUT_SLA):
            raise ValueError("sla: focus goodput needs sla.p99_ttft_ms and/or sla.median_tpot_ms to measure against")
        return self


# ---- the plan ----------------------------------------------------------------------------------------


class Regime(_Strict):
    """How a figure was measured: on a warmed server or a cold one, eager or with CUDA graphs."""

    cache: Literal["warm", "cold"]
    graphs: Literal["eager", "graphs"]

    @property
    def label(self) -> str:
        return f"{self.cache}/{self.graphs}"


class BenchStep(_Strict):
    concurrency: int
    trial: int
    num_prompts: int
    result_file: str = Field(description="in the cell's folder")
    command: list[str]


class CellPlan(_Strict):
    """One cell as it will boot: its levers, its serve config after the gates, every command in order."""

    index: int
    name: str
    baseline: bool
    levers: dict[str, Any]
    serve: ServeConfig
    regime: Regime
    gates: list[str] = Field(description="what the methodology gates changed in this cell, and why")
    widened: list[str] = Field([], description="what of the server config's allowlist widening this cell uses")
    boot_command: list[str]
    warmup_command: list[str] | None
    benches: list[BenchStep]
    done: Verdict | None = Field(None, description="green or red: a verdict exists, a run skips this cell")


class CampaignPlan(_Strict):
    """Every boot and bench a run would do, in order; nothing is started to make it."""

    campaign: str
    path: str
    target: str
    engine: str
    focus: Focus
    baseline: str
    concurrencies: list[int]
    bench_backend: str | None
    gates: list[str] = Field(description="campaign-wide gate notes")
    cells: list[CellPlan]
    boots: int = Field(description="boots a run would do now: one per cell without a verdict")
    benches: int
    note: str = "the bench commands write into the server's run folder on the target, shown as $RUN_DIR"


# ---- one cell's verdict --------------------------------------------------------------------------------


class Stat(_Strict):
    """One metric over a concurrency's trials."""

    mean: float
    std: float | None = Field(None, description="sample std over trials; null with one trial")
    n: int
    values: list[float]


class SlaCheck(_Strict):
    metric: str
    limit: float
    kind: Literal["max", "min"]
    value: float | None
    ok: bool


class Trial(_Strict):
    trial: int
    warm: bool = Field(description="the server had served requests before this bench")
    result_file: str | None
    figures: BenchResult | None
    server_healthy_after: bool
    exit_code: int
    log_lines: Annotated[list[str], Field(max_length=50)] = []


class ConcurrencyResult(_Strict):
    concurrency: int
    num_prompts: int
    ok: bool = Field(description="every trial completed every request and the server stayed healthy")
    reason: str | None = None
    metrics: dict[str, Stat] = {}
    sla: list[SlaCheck] = []
    sla_ok: bool = True
    trials: list[Trial] = []


class BootRecord(_Strict):
    status: BootStatus
    reason: str
    boot_s: float | None
    log_file: str | None
    signals: BootSignals


class Commands(_Strict):
    boot: list[str]
    warmup: list[str] | None = None
    bench: list[list[str]] = []


class Context(_Strict):
    """Everything a figure depends on, so a number is never bare."""

    model: str
    gpu: GpuProfile | None = Field(None, description="null where the host showed no GPU")
    host: str | None = None
    node: str | None = Field(None, description="the host's machine id: tells two runs on one node apart from two nodes")
    engine: str
    engine_version: str | None
    serve: ServeConfig
    workload: CampaignWorkload
    regime: Regime
    bench_backend: str | None
    bench_client: str = Field(description="the engine whose own bench client ran, at engine_version")
    trials: int
    warmup_requests: int
    simulated: bool = False


class CellVerdict(_Strict):
    """cells/<cell>/verdict.yml: one cell's boot, its figures per concurrency, and whether it held."""

    schema_version: Literal[1] = 1
    campaign: str
    cell: str
    index: int
    baseline: bool
    levers: dict[str, Any]
    verdict: Verdict
    reason: str
    gates: list[str] = []
    widened: list[str] = []
    boot: BootRecord
    results: list[ConcurrencyResult] = []
    commands: Commands
    context: Context
    started_at: datetime
    ended_at: datetime
    wall_s: float


# ---- status, aggregate, champion --------------------------------------------------------------------


class CellState(_Strict):
    cell: str
    state: Literal["green", "red", "running", "pending"]
    reason: str | None = None


class CampaignStatus(_Strict):
    campaign: str
    path: str
    results: str = Field(description="the results folder: cells/<cell>/verdict.yml, report.md")
    total: int
    done: int
    green: int
    red: int
    cells: list[CellState]
    running: str | None = Field(None, description="the cell whose server a runner recorded as running")
    next: str = Field(description="what to do next, in one sentence")


class TableRow(_Strict):
    """One cell at one concurrency, with the focus metric and the guards beside it."""

    cell: str
    concurrency: int
    verdict: Verdict
    regime: str
    ok: bool
    sla_ok: bool
    focus_value: float | None
    focus_std: float | None
    output_throughput: float | None
    output_throughput_per_gpu: float | None
    tokens_per_s_per_user: float | None
    median_ttft_ms: float | None
    p99_ttft_ms: float | None
    median_tpot_ms: float | None
    median_itl_ms: float | None
    failed: int | None
    num_prompts: int


class CampaignTable(_Strict):
    campaign: str
    focus: Focus
    focus_metric: str
    direction: Direction
    concurrencies: list[int]
    cells: list[str]
    missing: list[str] = Field(description="cells without a verdict yet")
    rows: list[TableRow]


class RankedCell(_Strict):
    cell: str
    regime: str
    score: float | None = Field(description="the focus metric that ranks the cell (see ChampionReport.scoring)")
    at_concurrency: int | None = None
    delta_pct: float | None = Field(None, description="better than the baseline by this much (negative: worse)")
    noise_band_pct: float | None = None
    band_source: Literal["trials", "default", "campaign"] | None = None
    outcome: Literal["baseline", "win", "no_improvement", "worse", "not_ranked", "excluded"]
    why: str


class RegimeGroup(_Strict):
    regime: str
    cells: list[RankedCell]
    note: str


class ChampionReport(_Strict):
    """The champion under the SLA, or "no improvement": always a DRAFT until an A/B confirms it."""

    campaign: str
    focus: Focus
    metric: str
    direction: Direction
    scoring: str = Field(description="how a cell's figures become its score")
    baseline: str
    regime: str | None = Field(None, description="the regime ranked: the baseline's")
    champion: str | None
    outcome: Literal["improvement", "no_improvement", "no_baseline", "no_results"]
    rigor: Literal["DRAFT"] = "DRAFT"
    note: str
    ranked: list[RankedCell]
    top: list[str]
    other_regimes: list[RegimeGroup] = []
    excluded: list[RankedCell] = []


# ---- tool results ------------------------------------------------------------------------------------


class CellOutcome(_Strict):
    cell: str
    verdict: Verdict
    reason: str
    boot_s: float | None
    wall_s: float


class CampaignRunResult(_Strict):
    campaign: str
    dry_run: bool
    plan: CampaignPlan | None = Field(None, description="the commands, for a dry run")
    ran: list[CellOutcome] = []
    skipped: list[str] = Field([], description="cells that already had a verdict (a resumed campaign)")
    boots: int = 0
    stopped_early: bool = False
    reason: str
    next: str


class Series(_Strict):
    label: str
    x: list[float]
    y: list[float]


class Plot(_Strict):
    name: str
    file: str
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    marked: Series | None = Field(None, description="the champion's point(s), drawn on top")


class CampaignReport(_Strict):
    campaign: str
    report: str
    plots: list[Plot]
    table: CampaignTable
    champion: ChampionReport


__all__ = [
    "BaseServe", "BenchStep", "BootRecord", "Campaign", "CampaignPlan", "CampaignReport", "CampaignRunResult",
    "CampaignStatus", "CampaignTable", "CampaignWorkload", "CellOutcome", "CellPlan", "CellSpec", "CellState",
    "CellVerdict", "ChampionReport", "Commands", "ConcurrencyResult", "Context", "FOCUS_METRIC", "Grid", "LEVERS",
    "Levers", "METRICS", "Plot", "RankedCell", "Regime", "RegimeGroup", "Series", "SlaCheck", "Stat", "TableRow",
    "Trial",
]
