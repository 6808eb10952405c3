"""ladder.yml: one model on one GPU profile, its floor, its fixed knobs, its rungs, its ceiling.

Rungs are append-only: a rung is never edited after it is written, except that
the LAST rung's smoke test is filled in once. A replay is a new rung that
names the rung it re-runs (`replay_of`).
"""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, create_model, model_validator

from redline.engines.names import DEFAULT_ENGINE, EngineName
from redline.models.bench import BenchResult, BenchWorkload, Count
from redline.models.boot import BootSignals, BootStatus, CompileCache
from redline.models.context import ContextDescriptor
from redline.models.known_good import KnownGoodUse
from redline.models.memory import PredictedKv
from redline.models.serve import MODEL_RE, ServeConfig
from redline.models.shape import ModelShape
from redline.models.strict import Strict

Policy = Literal["predict", "signal", "doubling"]
Variable = Literal["max_model_len", "max_num_batched_tokens"]
# "joint": a rung at the predicted whole ceiling (both knobs at once), the predict policy's climb from the floor
Climb = Literal["floor", "joint", "max_model_len", "max_num_batched_tokens"]
Route = Literal["run_rung", "smoke_test", "record_ceiling", "diagnose", "done"]

# The knobs a ladder climbs; every other ServeConfig field is held fixed.
CLIMBED = ("model", "max_model_len", "max_num_batched_tokens")


class _FixedBase(Strict):
    if TYPE_CHECKING:
        # mypy's view of the one fixed knob read by name; the real field is ServeConfig's, added by create_model below.
        gpu_memory_utilization: float = 0.9

    @model_validator(mode="after")
    def _valid_as_serve_config(self) -> "_FixedBase":
        ServeConfig(model="m", max_model_len=1, **self.model_dump())  # the flag and env rules of ServeConfig
        return self


def _fixed_fields() -> dict[str, Any]:
    return {name: (field.annotation, field) for name, field in ServeConfig.model_fields.items() if name not in CLIMBED}


# Built from ServeConfig so a knob added there is held fixed here without a second list to keep.
if TYPE_CHECKING:
    FixedKnobs = _FixedBase  # mypy cannot see create_model's fields; _FixedBase declares those read by name
else:
    FixedKnobs = create_model(
        "FixedKnobs",
        __base__=_FixedBase,
        __doc__="Every serve knob the climb holds fixed (gpu_memory_utilization first among them).",
        **_fixed_fields(),
    )


class ModelRef(Strict):
    key: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")]
    path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=4096,
            pattern=MODEL_RE.pattern,
            description="as the engine's serve command takes it: a path or hub id",
        ),
    ]
    max_position_embeddings: Count | None = None
    shape: ModelShape | None = Field(
        None, description="the decoder's sizes from config.json (read at init, or on the target at the first boot)"
    )


class GpuProfile(Strict):
    name: Annotated[str | None, Field(max_length=200)] = None
    memory_gib: Annotated[float | None, Field(gt=0)] = None
    count: Annotated[int, Field(ge=1, le=1024)] = 1


class Floor(Strict):
    """The known-good boot the climb starts from."""

    max_model_len: Count
    max_num_batched_tokens: Count


class SmokeWorkload(BenchWorkload):
    """The load a smoke test puts on a rung: near-max-length requests at the concurrency floor."""


class SmokeTest(Strict):
    attempted: bool = False
    outcome: Literal["pass", "fail"] | None = None
    reason: str | None = None
    workload: SmokeWorkload | None = None
    figures: BenchResult | None = None
    server_healthy_after: bool | None = None
    log_lines: Annotated[list[str], Field(max_length=200)] = []
    result_file: str | None = None
    recorded_at: datetime | None = None
    context: ContextDescriptor | None = Field(
        None, description="the full context of the figures (a pass/fail gate's load, never a performance claim)"
    )

    @model_validator(mode="after")
    def _outcome_iff_attempted(self) -> "SmokeTest":
        if self.attempted != (self.outcome is not None):
            raise ValueError("a smoke test has an outcome exactly when it was attempted")
        return self

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    @property
    def failed(self) -> bool:
        return self.outcome == "fail"


class Prediction(PredictedKv):
    """A rung's KV cache as the memory model predicted it before the boot (never a measured figure)."""


class JointPlan(Strict):
    """The predict policy's whole ceiling: the largest max_model_len whose KV cache holds min_concurrency requests
    with max_num_batched_tokens at its target, predicted from the floor's boot."""

    max_model_len: Count
    max_num_batched_tokens: Count
    predicted: Prediction
    reason: str


class Rung(Strict):
    """One clean boot of one serve config, as its log told it."""

    index: Annotated[int, Field(ge=1)]
    climbs: Climb
    replay_of: Annotated[int | None, Field(ge=1)] = None
    simulated: bool = False
    status: BootStatus
    reason: str
    serve: ServeConfig
    signals: BootSignals
    smoke_test: SmokeTest = SmokeTest()
    started_at: datetime | None = None
    ended_at: datetime | None = None
    boot_s: Annotated[float | None, Field(ge=0)] = None
    log_file: str | None = None
    log_source: str | None = None
    widened: Annotated[
        list[str], Field(description="what of the server config's allowlist widening this boot used")
    ] = []
    predicted: Prediction | None = Field(None, description="what the memory model predicted before this boot")
    drift: str | None = Field(None, description="the boot's KV cache outside its predicted band, by how much")

    @model_validator(mode="after")
    def _consistent(self) -> "Rung":
        if self.status != self.signals.status:
            raise ValueError(f"rung {self.index}: status {self.status} differs from its signals' {self.signals.status}")
        if self.replay_of is not None and self.replay_of >= self.index:
            raise ValueError(f"rung {self.index} cannot replay rung {self.replay_of}: only earlier rungs")
        if self.smoke_test.attempted and not self.status.booted:
            raise ValueError(f"rung {self.index} did not boot, so it cannot have a smoke test")
        return self

    @property
    def config(self) -> tuple[int, int | None]:
        return self.serve.max_model_len, self.serve.max_num_batched_tokens


class Ceiling(Strict):
    """The highest config that booted and passed its smoke test."""

    tradeoff: str | None = Field(
        None,
        description="what the ceiling's knobs cost in KV tokens against the floor's, each knob's share measured "
        "between rungs that differ in it alone, or said as unknown",
    )
    max_model_len: Count
    max_num_batched_tokens: Count
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    proven_by: Annotated[list[int], Field(min_length=1)]
    compile_cache: CompileCache | None = Field(
        None,
        description="the torch.compile cache of the proving boot whose KV cache it keeps (the lowest): cold, as a "
        "fresh deployment boots; warm where the deployment keeps its cache; unused (eager). Null: recorded before "
        "redline read it",
    )
    serve_command: str
    headroom: str | None = None
    reason: str
    recorded_at: datetime


class AdoptedFrom(Strict):
    """Where a ladder climbed elsewhere was copied in from (ladder_adopt): the file, when, and its bytes' digest."""

    path: Annotated[str, Field(min_length=1, max_length=4096, description="the ladder file it was copied from")]
    at: datetime
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="of that file's bytes, as read")]


class Ladder(Strict):
    schema_version: Literal[1] = 1
    model: ModelRef
    gpu: GpuProfile | None = Field(None, description="null until given at init or read from the first run's host")
    engine: Annotated[EngineName, Field(description="the engine every rung boots")] = DEFAULT_ENGINE
    engine_version: Annotated[str | None, Field(max_length=64)] = None
    policy: Policy = "signal"
    fixed: FixedKnobs = FixedKnobs()
    floor: Floor
    min_concurrency: Annotated[
        int, Field(ge=1, le=1 << 16, description="max-length requests the ceiling must hold at once")
    ] = 1
    kv_block_size: Annotated[int, Field(ge=1, le=1 << 16)] = 16
    allow_long_context: bool = False
    max_num_batched_tokens_cap: Count | None = None
    boot_deadline_s: Annotated[float, Field(gt=0, le=86400, description="a runner's wait for one boot")] = 3600
    smoke_deadline_s: Annotated[float, Field(gt=0, le=86400, description="a runner's wait for one smoke test")] = 3600
    target_max_num_batched_tokens: Count | None = Field(
        None, description="the predict policy's batched tokens at the ceiling (null: the engine's default chunk)"
    )
    joint: JointPlan | None = Field(
        None, description="the predict policy's whole ceiling, predicted once the floor booted"
    )
    deployment_compile_cache: Literal["cold", "warm"] | None = Field(
        None,
        description="the torch.compile cache a deployment of the ceiling boots with, which the ceiling is proven in: "
        "cold (a fresh deployment), or warm (the target keeps its cache: its compile_cache_persists). Null: not said "
        "yet (cold); a runner fills it from its target at the first boot",
    )
    rungs: list[Rung] = []
    ceiling: Ceiling | None = None
    known_good: KnownGoodUse | None = Field(
        None, description="the known-good entry applied to the fixed knobs at init, or why none was"
    )
    adopted_from: AdoptedFrom | None = Field(
        None, description="set when the ladder was climbed elsewhere and copied in (ladder_adopt): its origin"
    )

    @model_validator(mode="after")
    def _rungs_in_order(self) -> "Ladder":
        for position, rung in enumerate(self.rungs, start=1):
            if rung.index != position:
                raise ValueError(
                    f"rung {rung.index} is at position {position}: rungs are numbered 1, 2, 3, ... in order"
                )
        if self.ceiling is not None and max(self.ceiling.proven_by) > len(self.rungs):
            raise ValueError("the ceiling names a rung the ladder does not have")
        return self


class NextStep(Strict):
    """What the ladder needs next, and why. `rung` is the serve config to boot, smoke-test or keep."""

    route: Route
    rung: ServeConfig | None = None
    reason: str
    climbs: Climb | None = None
    rung_index: int | None = Field(None, description="the rung to smoke-test, diagnose or keep as the ceiling")
    replay_of: int | None = None
    smoke: SmokeWorkload | None = None
    predicted: Prediction | None = Field(None, description="the memory model's KV cache for the rung to boot")
    command: str | None = Field(
        None, description="ready to paste: the engine's serve command to boot, its bench command to smoke-test"
    )


class RungRow(Strict):
    """One line of `ladder status`."""

    index: int
    climbs: Climb
    replay_of: int | None
    simulated: bool
    max_model_len: int
    max_num_batched_tokens: int | None
    status: BootStatus
    kv_cache_tokens: int | None
    max_concurrency: float | None
    smoke: Literal["pass", "fail"] | None
    boot_s: float | None


class LadderStatus(Strict):
    path: str
    ladder: Ladder
    rows: list[RungRow]
    next: NextStep


class LadderAdopted(Strict):
    """ladder_adopt's answer: the ladder now in the workspace, where it came from, the rung files copied with it."""

    path: str = Field(description="the adopted ladder, in the workspace (name it as `ladder` in the other tools)")
    adopted_from: AdoptedFrom
    files: list[str] = Field(description="the rung files copied with it (boot logs, smoke results), by their new path")
    rungs: int
    ceiling: Ceiling | None = Field(description="the ceiling it recorded; null: the climb was not finished")
    next: NextStep
