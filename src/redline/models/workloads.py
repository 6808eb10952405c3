"""What a campaign's benches send: one workload, or several named ones, and how a champion across them is named.

    workload:                    # one shape: every figure is of it, files bench-c16.json
      input_len: 1024
      output_len: 256
    workloads:                   # or several, each cell benched on each: files bench-<name>-c16.json
      chat: {input_len: 1024, output_len: 256}
      long: {input_len: 4096, output_len: 512}
      rag: {input_len: 8192, output_len: 256, concurrencies: [4]}   # its own concurrencies (default: the experiment's)
      live: {input_len: 1024, output_len: 256, rates: [2, 4, 8]}    # open loop: requests/s, Poisson arrivals (its own
                                                                    # burstiness: vLLM's gamma shape, 1 = Poisson)
    combine: all                 # each (default): one champion per workload; all: a champion wins on every
                                 # workload; {weights: {chat: 3, long: 1}}: on the weighted mean of its gains

Each figure keeps its own workload (two shapes are never one "random"); the policy is policy/workload_champion.py.

A workload's load points (`Load`): each concurrency it runs at (closed loop: that many requests in flight), then each
request rate (open loop: requests sent at that mean rate whatever the server does, as a service sees them). A
workload that gives rates and no concurrencies runs at its rates alone; one that gives neither, at the experiment's
concurrencies.
"""

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

from pydantic import Field, PrivateAttr, field_validator, model_validator

from redline.errors import InputError
from redline.models.bench import Count
from redline.models.load import Load, Rate, Speedup, load_of, unique_rates
from redline.models.slug import Slug
from redline.models.strict import Strict
from redline.models.trace import Trace

MAX_WORKLOADS = 8


def unique_concurrencies(values: list[int]) -> list[int]:
    """Concurrencies in order, each given once (ValueError otherwise)."""
    if len(set(values)) != len(values):
        raise ValueError(f"each concurrency once: {values}")
    return sorted(values)


def most_tokens(input_len: int, output_len: int, range_ratio: float = 0.0, prefix_len: int = 0) -> int:
    """The most tokens one request of a workload holds at its end (its shared prefix, its longest input and output):
    what max_model_len must fit, and what a KV cache is divided by."""
    spread = 1 + range_ratio
    return prefix_len + math.ceil(input_len * spread) + math.ceil(output_len * spread)


TracePath = Annotated[str, Field(min_length=1, max_length=4096, pattern=r"^[^\x00-\x1f]+$")]


class TraceWindow(Strict):
    """The part of a trace a workload replays: its rows from `start_s` to `end_s` seconds after its first arrival, then
    from the `first` of those, at most `rows`."""

    start_s: Annotated[float | None, Field(ge=0, le=1e9, allow_inf_nan=False)] = None
    end_s: Annotated[float | None, Field(gt=0, le=1e9, allow_inf_nan=False)] = None
    first: Annotated[int, Field(ge=0, le=1 << 24)] = 0
    rows: Annotated[int | None, Field(ge=1, le=1 << 24)] = None

    @model_validator(mode="after")
    def _ordered(self) -> "TraceWindow":
        if self.start_s is not None and self.end_s is not None and self.end_s <= self.start_s:
            raise ValueError(f"window: end_s {self.end_s:g} must be after start_s {self.start_s:g}")
        return self


RANDOM_ONLY = ("input_len", "output_len", "num_prompts", "range_ratio", "prefix_len")


class WorkloadSpec(Strict):
    """What a bench sends: random prompts of fixed lengths (every request decodes output_len tokens), or a trace's
    requests (`trace:`), its lengths fresh prompts of, at its arrivals or a rate or a concurrency."""

    dataset: Literal["random", "trace"] = Field(
        "random", description="random prompts of the lengths given; trace: the requests of `trace`"
    )
    trace: TracePath | None = Field(
        None,
        description="a trace file, relative to the experiment's file: redline's JSONL (input_len, output_len, "
        "arrival_s), or the Azure LLM inference trace's or BurstGPT's CSV as published",
    )
    window: TraceWindow | None = Field(None, description="the part of the trace replayed; default: all of it")
    input_len: Count | None = Field(None, description="random: each prompt's tokens")
    output_len: Count | None = Field(None, description="random: each request's output tokens")
    seed: int = 0
    num_prompts: Count | None = Field(None, description="prompts per concurrency; default 4 x c, never under 2 x c")
    range_ratio: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.0, description="each request's input and output lengths drawn from length x (1 +- range_ratio); 0: fixed"
    )
    prefix_len: Annotated[int, Field(ge=0, le=1 << 26)] = Field(
        0,
        description="tokens every prompt of a bench shares at its start, before its own input_len: the engine's "
        "prefix cache is part of what the bench measures (each bench its own prefix); 0: none shared",
    )
    ignore_eos: Literal[True] = Field(True, description="always: every cell decodes the same tokens")
    concurrencies: Annotated[list[Count] | None, Field(min_length=1, max_length=32)] = Field(
        None,
        description="this workload's own concurrencies (e.g. long prompts at a low one, short ones at a high one); "
        "default: the experiment's, unless it gives rates or speedups",
    )
    rates: Annotated[list[Rate] | None, Field(min_length=1, max_length=32)] = Field(
        None,
        description="request rates (requests/s) it is sent at, open loop: arrivals at that mean rate whatever the "
        "server does (the bench client's request rate), beside or instead of concurrencies",
    )
    burstiness: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] = Field(
        1.0,
        description="with rates: the arrivals' gamma shape as the bench client takes it (its burstiness): 1 is "
        "Poisson, under 1 burstier, over 1 more even",
    )
    speedups: Annotated[list[Speedup] | None, Field(min_length=1, max_length=32)] = Field(
        None,
        description="a trace with arrival times: replayed at its own arrivals, this many times faster (1: as "
        "recorded); a trace given neither concurrencies, rates nor speedups is replayed as recorded",
    )
    _trace: Trace | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _dataset_of_trace(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("trace") is not None and "dataset" not in data:
            return {**data, "dataset": "trace"}
        return data

    @field_validator("concurrencies")
    @classmethod
    def _each_once(cls, values: list[int] | None) -> list[int] | None:
        return None if values is None else unique_concurrencies(values)

    @field_validator("rates", "speedups")
    @classmethod
    def _each_rate_once(cls, values: list[float] | None) -> list[float] | None:
        return None if values is None else unique_rates(values)

    @model_validator(mode="after")
    def _one_dataset(self) -> "WorkloadSpec":
        if self.burstiness != 1.0 and not self.rates:
            raise ValueError("burstiness: it shapes the arrivals of an open-loop bench: give rates, or drop it")
        if self.dataset == "trace":
            given = [f for f in RANDOM_ONLY if getattr(self, f) not in (None, 0, 0.0)]  # a dump writes the defaults
            if self.trace is None:
                raise ValueError("trace: a trace workload names its trace file (trace: traces/chat.jsonl)")
            if given:
                raise ValueError(
                    f"{given[0]}: a trace workload takes its requests' lengths and count from the trace: drop it (a "
                    "window narrows the trace)"
                )
            return self
        if self.trace is not None or self.window is not None or self.speedups is not None:
            field = "trace" if self.trace is not None else ("window" if self.window is not None else "speedups")
            raise ValueError(f"{field}: random prompts replay no trace: give trace: <file>, or drop {field}")
        if self.input_len is None or self.output_len is None:
            missing = "input_len" if self.input_len is None else "output_len"
            raise ValueError(f"{missing}: give the random prompts' {missing}, or a trace: <file> to replay")
        return self

    @property
    def replayed(self) -> Trace:
        """The trace it replays (its window), as the experiment's reader attached it (ops: load_campaign)."""
        if self._trace is None:
            raise InputError(
                f"the trace {self.trace} was not read before its workload was used: read it through the file"
            )
        return self._trace

    def with_trace(self, trace: Trace) -> "WorkloadSpec":
        """A copy that replays `trace` (its window already taken by the reader)."""
        copy = self.model_copy()
        copy._trace = trace
        return copy

    @property
    def trace_id(self) -> str:
        """The trace it replays, as a figure's context names it: its file, its SHA-256's start, its window's rows."""
        trace = self.replayed
        return f"{self.trace} sha256:{trace.sha256[:16]} ({len(trace.rows)} rows, {trace.format})"

    @property
    def lengths(self) -> tuple[int, int]:
        """Its longest input and output: the random prompts' own, or the trace's longest of each."""
        if self.dataset == "trace":
            rows = self.replayed.rows
            return max(r.input_len for r in rows), max(r.output_len for r in rows)
        assert self.input_len is not None and self.output_len is not None  # a random workload has both
        return self.input_len, self.output_len

    @property
    def tokens(self) -> int:
        """The most tokens one request holds at its end: what max_model_len must fit."""
        if self.dataset == "trace":
            return self.replayed.longest
        return most_tokens(*self.lengths, self.range_ratio, self.prefix_len)


Workloads = Annotated[
    dict[Slug, WorkloadSpec],
    Field(min_length=2, max_length=MAX_WORKLOADS, description="named workloads; every cell is benched on each"),
]


class Weights(Strict):
    """combine: {weights: {...}}: the champion by the weighted mean of its gains over the workloads."""

    weights: Annotated[dict[Slug, Annotated[float, Field(gt=0, le=1e6)]], Field(min_length=2)]


Combine = Literal["each", "all"] | Weights
COMBINE_HELP = (
    "how a champion across workloads is named: each (default: one champion per workload, none across them), all "
    "(a win on every workload), or {weights: {<workload>: <weight>, ...}} (the weighted mean of the gains)"
)
NamedShape = tuple[str | None, WorkloadSpec]


class WorkloadAt(NamedTuple):
    """One workload as a server is benched on it: its name (None where it is the only one), its shape and the load
    points it runs at (its own concurrencies, else the experiment's unless it gives rates; then its rates)."""

    name: str | None
    shape: WorkloadSpec
    points: list[Load]

    @property
    def concurrencies(self) -> list[int]:
        return [p.concurrency for p in self.points if p.concurrency is not None]


def points_of(shape: WorkloadSpec, default: list[int]) -> list[Load]:
    """A workload's load points: its concurrencies (else `default`, the experiment's, unless it gives rates or is a
    trace), then its rates, then its speedups (a trace given none of the three: as recorded, x1)."""
    trace = shape.dataset == "trace"
    concurrencies = shape.concurrencies or ([] if shape.rates or trace else default)
    speedups = shape.speedups or ([1.0] if trace and not (shape.concurrencies or shape.rates) else [])
    return (
        [Load(concurrency=c) for c in concurrencies]
        + [Load(rate=r) for r in shape.rates or []]
        + [Load(speedup=x) for x in speedups]
    )


class NamedWorkloads:
    """What a campaign and an A/B share of their workload fields (`workload`, `workloads`, `combine`, declared by
    each in its own order): the shapes in order, one by name, the longest, and the one check of them all."""

    if TYPE_CHECKING:
        workload: WorkloadSpec | None
        workloads: dict[str, WorkloadSpec] | None
        combine: Combine
        concurrencies: list[int]

    def shapes(self) -> list[NamedShape]:
        """Every workload a server is benched on, in order: (name, shape); one unnamed where workload: is given."""
        if self.workloads is not None:
            return list(self.workloads.items())
        assert self.workload is not None  # check_workloads holds one or the other
        return [(None, self.workload)]

    def shape(self, name: str | None) -> WorkloadSpec:
        return dict(self.shapes())[name]

    def loads(self) -> list[WorkloadAt]:
        """Every workload a server is benched on, in order, with the load points it runs at."""
        return [WorkloadAt(name, w, points_of(w, self.concurrencies)) for name, w in self.shapes()]

    def points_of(self, name: str | None) -> list[Load]:
        """The load points the workload `name` runs at."""
        return points_of(self.shape(name), self.concurrencies)

    def concurrencies_of(self, name: str | None) -> list[int]:
        """The concurrencies the workload `name` runs at (its own, else the experiment's unless it gives rates)."""
        return [p.concurrency for p in self.points_of(name) if p.concurrency is not None]

    @property
    def longest(self) -> int:
        """The most tokens one request of any workload holds (max_model_len must fit them)."""
        return max(w.tokens for _, w in self.shapes())

    @property
    def kv_need(self) -> int:
        """The most KV tokens its benches hold at once: each workload's top concurrency times its requests' whole
        length, the largest (long prompts at a low concurrency and short ones at a high one need the larger of the
        two, not the longest at the highest)."""
        return max(max(load.concurrencies, default=1) * load.shape.tokens for load in self.loads())  # rates: one

    def check_workloads(self) -> None:
        """One way to say the workloads, a concurrency for each, and a combine that names them (ValueError, naming
        the field). Where every workload gives its own concurrencies and the experiment none, the experiment's are
        every workload's together (the highest of them is what max_num_seqs must hold)."""
        if (self.workload is None) == (self.workloads is None):
            raise ValueError("workload: give workload: (one shape) or workloads: (several, each named), not both")
        own = [w.concurrencies for _, w in self.shapes()]
        if not self.concurrencies:
            if not all(w.concurrencies or w.rates or w.dataset == "trace" for _, w in self.shapes()):
                raise ValueError(
                    "concurrencies: give the concurrencies every bench runs at, or each workload's own concurrencies "
                    "or rates"
                )
            self.concurrencies = sorted({c for cs in own if cs for c in cs})
        if self.workloads is None:
            if self.combine != "each":
                raise ValueError("combine: it names a champion across workloads; give workloads: or drop combine")
            return
        if isinstance(self.combine, Weights) and set(self.combine.weights) != set(self.workloads):
            names = ", ".join(self.workloads)
            raise ValueError(f"combine.weights: give a weight for each workload and no other: {names}")


__all__ = [
    "Load",
    "Rate",
    "TraceWindow",
    "load_of",
    "points_of",
    "unique_rates",
    "COMBINE_HELP",
    "Combine",
    "MAX_WORKLOADS",
    "NamedShape",
    "NamedWorkloads",
    "unique_concurrencies",
    "WorkloadAt",
    "most_tokens",
    "Weights",
    "WorkloadSpec",
    "Workloads",
]
