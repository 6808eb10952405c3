"""What a campaign's benches send: one workload, or several named ones, and how a champion across them is named.

    workload:                    # one shape: every figure is of it, files bench-c16.json
      input_len: 1024
      output_len: 256
    workloads:                   # or several, each cell benched on each: files bench-<name>-c16.json
      chat: {input_len: 1024, output_len: 256}
      long: {input_len: 4096, output_len: 512}
      rag: {input_len: 8192, output_len: 256, concurrencies: [4]}   # its own concurrencies (default: the experiment's)
    combine: all                 # each (default): one champion per workload; all: a champion wins on every
                                 # workload; {weights: {chat: 3, long: 1}}: on the weighted mean of its gains

Each figure keeps its own workload (two shapes are never one "random"); the policy is policy/workload_champion.py.
"""

import math
from typing import TYPE_CHECKING, Annotated, Literal, NamedTuple

from pydantic import Field, field_validator

from redline.models.bench import Count
from redline.models.slug import Slug
from redline.models.strict import Strict

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


class WorkloadSpec(Strict):
    """What a bench sends: random prompts of fixed lengths; every request decodes output_len tokens."""

    dataset: Literal["random"] = "random"
    input_len: Count
    output_len: Count
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
        "default: the experiment's",
    )

    @field_validator("concurrencies")
    @classmethod
    def _each_once(cls, values: list[int] | None) -> list[int] | None:
        return None if values is None else unique_concurrencies(values)

    @property
    def tokens(self) -> int:
        """The most tokens one request holds at its end: what max_model_len must fit."""
        return most_tokens(self.input_len, self.output_len, self.range_ratio, self.prefix_len)


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
    """One workload as a server is benched on it: its name (None where it is the only one), its shape and the
    concurrencies it runs at (its own, else the experiment's)."""

    name: str | None
    shape: WorkloadSpec
    concurrencies: list[int]


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
        """Every workload a server is benched on, in order, with the concurrencies it runs at."""
        return [WorkloadAt(name, w, w.concurrencies or self.concurrencies) for name, w in self.shapes()]

    def concurrencies_of(self, name: str | None) -> list[int]:
        """The concurrencies the workload `name` runs at (its own, else the experiment's)."""
        return self.shape(name).concurrencies or self.concurrencies

    @property
    def longest(self) -> int:
        """The most tokens one request of any workload holds (max_model_len must fit them)."""
        return max(w.tokens for _, w in self.shapes())

    @property
    def kv_need(self) -> int:
        """The most KV tokens its benches hold at once: each workload's top concurrency times its requests' whole
        length, the largest (long prompts at a low concurrency and short ones at a high one need the larger of the
        two, not the longest at the highest)."""
        return max(max(load.concurrencies) * load.shape.tokens for load in self.loads())

    def check_workloads(self) -> None:
        """One way to say the workloads, a concurrency for each, and a combine that names them (ValueError, naming
        the field). Where every workload gives its own concurrencies and the experiment none, the experiment's are
        every workload's together (the highest of them is what max_num_seqs must hold)."""
        if (self.workload is None) == (self.workloads is None):
            raise ValueError("workload: give workload: (one shape) or workloads: (several, each named), not both")
        own = [w.concurrencies for _, w in self.shapes()]
        if not self.concurrencies:
            if not all(own):
                raise ValueError("concurrencies: give the concurrencies every bench runs at, or each workload's own")
            self.concurrencies = sorted({c for cs in own if cs for c in cs})
        if self.workloads is None:
            if self.combine != "each":
                raise ValueError("combine: it names a champion across workloads; give workloads: or drop combine")
            return
        if isinstance(self.combine, Weights) and set(self.combine.weights) != set(self.workloads):
            names = ", ".join(self.workloads)
            raise ValueError(f"combine.weights: give a weight for each workload and no other: {names}")


__all__ = [
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
