"""campaign.yml and the plan made from it: the grid of cells over one base config, and every command a run does.

A campaign is a named grid of serve configs (cells) over one base config. Each
cell is booted once, by its engine (the campaign's, or the cell's own `engine`),
and benched at every concurrency on that one server by its engine's bench client:
one client for every engine, so cells of two engines compare. What a run leaves
(verdicts, the table, the champion) is in models/campaign_results.py.
"""

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AliasChoices, Field, create_model, field_validator, model_validator

from redline.engines.names import EngineName
from redline.models.experiment import ExperimentSpec
from redline.models.load_boundary import BoundarySpec
from redline.models.metrics import DIRECTIONS, Direction
from redline.models.search import SearchSpec
from redline.models.serve import MODEL_RE, Flags, ServeConfig
from redline.models.slug import Slug
from redline.models.strict import Strict

Focus = Literal["throughput", "latency", "goodput", "slo_goodput"]
Verdict = Literal["green", "red"]

# Every metric a campaign measures, and which way is better: the one metric table's (models/metrics.py). An SLA on a
# "lower" metric is a maximum, on a "higher" one a minimum.
# The metric each focus ranks cells by (goodput: the best per-GPU throughput of a concurrency inside the SLA).
FOCUS_METRIC: dict[str, str] = {
    "throughput": "output_throughput_per_gpu",
    "latency": "median_tpot_ms",
    "goodput": "output_throughput_per_gpu",
    # open loop (a rate, a trace's arrivals): the output tokens/s per GPU of the requests inside the SLA's per-request
    # limits, at the point where it is highest (goodput at a rate)
    "slo_goodput": "goodput_output_throughput_per_gpu",
}
GOODPUT_SLA = ("p99_ttft_ms", "median_tpot_ms")  # the limits that define goodput
# The levers a cell may set over the base config; every other knob is the base's, in every cell. A cell (or the
# grid) may also name its engine, which is not a serve knob: see AXES.
LEVERS = (
    "max_num_batched_tokens",
    "max_num_seqs",
    "kv_cache_dtype",
    "enforce_eager",
    "cudagraph_mode",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "extra_flags",
)
AXES = ("engine", *LEVERS)  # what a cell or the grid may set, in the grid's order (the first outermost)
# The largest plan redline makes (issue 19, class 1): checked from the lever lengths before a cell is built, so a
# 32^9-cell grid is one line in milliseconds. A bench is one concurrency of one trial of one cell (or A/B arm).
MAX_CELLS = 256
REPLICATE = re.compile(r"\.boot[0-9]+$")  # a replicate's folder, cells/<cell>.boot<k>: no cell is named so
MAX_BENCHES = 2048


def check_benches(field: str, counts: dict[str, int]) -> None:
    """Refuse a plan whose benches (the product of `counts`, multiplied, never built) are over MAX_BENCHES."""
    total = 1
    for n in counts.values():
        total *= n
    if total > MAX_BENCHES:
        made = " x ".join(f"{n} {what}" for what, n in counts.items())
        raise ValueError(
            f"{field}: {made} make {total:,} benches, over the {MAX_BENCHES:,} redline plans at once; "
            "give fewer values, or split it into several"
        )


Batched = Annotated[int, Field(gt=0, le=1 << 26)]
Seqs = Annotated[int, Field(gt=0, le=1 << 20)]
KvDtype = Annotated[str, Field(pattern=r"^[a-z0-9_]+$", max_length=32)]
GraphMode = Annotated[str, Field(pattern=r"^[A-Z_]+$", max_length=40)]


# ---- campaign.yml ----------------------------------------------------------------------------------


class Levers(Strict):
    """What one cell sets over the base config; unset (null) keeps the base's value (and the campaign's engine)."""

    engine: EngineName | None = Field(None, description="the engine this cell boots; default: the campaign's")
    max_num_batched_tokens: Batched | None = None
    max_num_seqs: Seqs | None = None
    kv_cache_dtype: KvDtype | None = None
    enforce_eager: bool | None = None
    cudagraph_mode: GraphMode | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    extra_flags: Flags | None = None

    def set(self) -> dict[str, Any]:
        """What this cell sets, in AXES order."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class CellSpec(Levers):
    """A named cell: its levers over the base config."""

    name: Slug

    @field_validator("name")
    @classmethod
    def _not_a_replicate(cls, name: str) -> str:
        if REPLICATE.search(name):
            raise ValueError(f"{name!r} ends as a replicate's folder does (<cell>.boot<k>): name the cell otherwise")
        return name


_V = TypeVar("_V")
# A lever's values in a grid: null, or 1 to 32 of them.
LeverValues = Annotated[list[_V] | None, Field(min_length=1, max_length=32)]


class Grid(Strict):
    """Values per lever; the cells are every combination, in AXES order (engine first, outermost), each lever's
    values in the order given, so the first cell takes every lever's first value."""

    engine: LeverValues[EngineName] = None
    max_num_batched_tokens: LeverValues[Batched] = None
    max_num_seqs: LeverValues[Seqs] = None
    kv_cache_dtype: LeverValues[KvDtype] = None
    enforce_eager: LeverValues[bool] = None
    cudagraph_mode: LeverValues[GraphMode] = None
    enable_chunked_prefill: LeverValues[bool] = None
    enable_prefix_caching: LeverValues[bool] = None
    extra_flags: LeverValues[Flags] = None

    def levers(self) -> dict[str, list[Any]]:
        return {k: v for k, v in self.model_dump().items() if v is not None}

    def size(self) -> int:
        """How many cells the grid makes: the lengths multiplied, never the product built."""
        lengths = [len(v) for k in type(self).model_fields if (v := getattr(self, k)) is not None]
        total = 1
        for n in lengths:
            total *= n
        return total if lengths else 0

    @model_validator(mode="after")
    def _not_a_bomb(self) -> "Grid":
        if (n := self.size()) > MAX_CELLS:
            lengths = " x ".join(str(len(v)) for k in AXES if (v := getattr(self, k)) is not None)
            raise ValueError(f"{lengths} values make {n:,} cells, over the {MAX_CELLS} a campaign may have")
        return self


class _BaseServeBase(Strict):
    if TYPE_CHECKING:
        # mypy's view of the one base knob read by name; the real field is added by create_model below.
        from_ladder: str | None = None

    @model_validator(mode="after")
    def _valid_as_serve_config(self) -> "_BaseServeBase":
        knobs = self.model_dump(exclude={"from_ladder"}, exclude_none=True)
        if self.from_ladder is None and "max_model_len" not in knobs:
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
    fields["from_ladder"] = (
        str | None,
        Field(None, min_length=1, max_length=4096, description="a ladder.yml whose recorded ceiling is the base"),
    )
    return fields


# Built from ServeConfig, so a knob added there is a base knob here without a second list to keep.
if TYPE_CHECKING:
    BaseServe = _BaseServeBase  # mypy cannot see create_model's fields; _BaseServeBase declares those read by name
else:
    BaseServe = create_model(
        "BaseServe",
        __base__=_BaseServeBase,
        __doc__="The serve config every cell starts from: ServeConfig's knobs, or a ladder's ceiling plus these.",
        **_base_fields(),
    )


class Campaign(ExperimentSpec):
    """campaign.yml: the grid, the workload and the focus of one tuning campaign (and what every experiment says:
    models/experiment.py)."""

    schema_version: Literal[1] = 1
    model: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=4096,
            pattern=MODEL_RE.pattern,
            description="path or hub id; taken from the ladder with base.from_ladder",
        ),
    ] = None
    base: BaseServe
    focus: Focus = "throughput"
    sla: dict[str, Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict, description="limits on named metrics: a maximum on *_ms, a minimum on throughputs"
    )
    repeats: Annotated[
        int,
        Field(
            ge=1,
            le=20,
            validation_alias=AliasChoices("repeats", "trials"),  # `trials` in files written before it meant boots
            description="benches per concurrency on each boot of a cell (`trials` in older files)",
        ),
    ] = 1
    replicates: Annotated[
        int,
        Field(
            ge=0,
            le=8,
            description="fresh boots of the top two cells (the champion and the runner-up) beyond their first: the "
            "boot-to-boot spread every cell is judged by; 0: none (the band is then noise_band_pct, else the 3% "
            "default, and says so)",
        ),
    ] = 1
    parallel: Annotated[
        int,
        Field(
            ge=1,
            le=64,
            description="cells run at once, each booted once on a server of its own; more than 1 needs a target "
            "that runs several servers at once (kubernetes: a pod each)",
        ),
    ] = 1
    bench_backend: Annotated[
        str | None,
        Field(
            pattern=r"^[a-z0-9][a-z0-9_-]*$",
            max_length=40,
            description="the bench client's backend for cells of the campaign's engine; default: the engine's. "
            "A cell of another engine is benched by the same client under its own engine's backend",
        ),
    ] = None
    grid: Grid | None = None
    cells: list[CellSpec] = []
    continue_on_red: bool = False
    noise_band_pct: Annotated[float | None, Field(gt=0, le=100)] = Field(
        None,
        description="below this difference a cell is no improvement, where no boot-to-boot spread was measured "
        "(replicates: 0); default: 3%",
    )
    search: SearchSpec | None = Field(
        None, description="boot only the cells a search proposes (policy/search.py), not the whole grid"
    )
    boundary: BoundarySpec | None = Field(
        None,
        description="focus goodput: after the listed concurrencies, probe each cell's server for the highest "
        "concurrency whose SLA holds (policy/load_boundary.py)",
    )

    @field_validator("sla")
    @classmethod
    def _sla_metrics_exist(cls, sla: dict[str, float]) -> dict[str, float]:
        for metric in sla:
            if metric not in DIRECTIONS:
                raise ValueError(f"no metric {metric!r}; metrics are {', '.join(DIRECTIONS)}")
        return sla

    @model_validator(mode="after")
    def _consistent(self) -> "Campaign":
        if not self.cells and (self.grid is None or not self.grid.levers()):
            raise ValueError("grid: empty: give at least one lever with values under grid, or cells")
        if self.model is None and self.base.from_ladder is None:
            raise ValueError("model: give the model (a path or hub id), or base.from_ladder to take the ladder's")
        names = [c.name for c in self.cells]
        if len(set(names)) != len(names):
            raise ValueError(f"cells: two cells share a name: {sorted({n for n in names if names.count(n) > 1})}")
        if self.focus in ("goodput", "slo_goodput") and not any(m in self.sla for m in GOODPUT_SLA):
            raise ValueError(
                f"sla: focus {self.focus} needs sla.p99_ttft_ms and/or sla.median_tpot_ms to measure against"
            )
        if self.focus == "slo_goodput" and not any(p.open_loop for n, _ in self.shapes() for p in self.points_of(n)):
            raise ValueError(
                "focus: slo_goodput counts the requests of open-loop benches: give a workload rates (or a trace), or "
                "focus goodput"
            )
        if self.boundary is not None and (self.focus not in ("goodput", "slo_goodput") or not self.latency_sla):
            raise ValueError("boundary: probing for the load boundary needs focus goodput and a latency SLA")
        if self.search is not None and self.parallel > 1:
            raise ValueError("search: a search proposes one cell at a time, from what the last measured: parallel 1")
        self._one_way_to_say_the_workloads()
        self._not_a_bomb()
        return self

    def _one_way_to_say_the_workloads(self) -> None:
        if self.workloads is None:
            return
        if self.boundary is not None:
            raise ValueError("boundary: works on one workload; give workload: or run one campaign per workload")
        if self.search is not None and self.combine == "each":
            raise ValueError(
                "search: climbs one answer across the workloads: set combine: all or combine: {weights: {...}}, "
                "or run one campaign per workload"
            )

    def _not_a_bomb(self) -> None:
        cells = len(self.cells) + (self.grid.size() if self.grid else 0)
        if cells > MAX_CELLS:
            raise ValueError(f"cells: {cells:,} cells (named and grid), over the {MAX_CELLS} a campaign may have")
        points = max(len(self.points_of(name)) for name, _ in self.shapes())
        check_benches(
            "concurrencies",
            {"cells": cells}
            | ({"workloads": len(self.workloads)} if self.workloads else {})
            | {"concurrencies": points, "repeats": self.repeats},
        )
        if self.boundary is not None:
            per_cell = points * self.repeats + self.boundary.most_benches
            check_benches("boundary", {"cells": cells, "benches per cell at most": per_cell})

    @property
    def latency_sla(self) -> dict[str, float]:
        """The SLA's maxima (its limits on metrics where lower is better): what a load boundary is probed against."""
        return {m: limit for m, limit in self.sla.items() if DIRECTIONS[m] == "lower"}

    @property
    def top_concurrency(self) -> int | None:
        """The highest concurrency a cell's server may be benched at: the listed ones', or the boundary's highest (a
        boundary by concurrency); None where it is benched at rates alone."""
        by = [int(self.boundary.highest)] if self.boundary is not None and self.boundary.by == "concurrency" else []
        return max([*self.concurrencies, *by], default=None)


__all__ = [
    "AXES",
    "BaseServe",
    "Campaign",
    "CellSpec",
    "Direction",
    "FOCUS_METRIC",
    "Focus",
    "GOODPUT_SLA",
    "Grid",
    "LEVERS",
    "Levers",
    "MAX_BENCHES",
    "MAX_CELLS",
    "Verdict",
    "check_benches",
]
