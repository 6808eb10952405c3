"""What a campaign's benches send: one workload, or several named ones, and how a champion across them is named.

    workload:                    # one shape: every figure is of it, files bench-c16.json
      input_len: 1024
      output_len: 256
    workloads:                   # or several, each cell benched on each: files bench-<name>-c16.json
      chat: {input_len: 1024, output_len: 256}
      long: {input_len: 4096, output_len: 512}
    combine: all                 # each (default): one champion per workload; all: a champion wins on every
                                 # workload; {weights: {chat: 3, long: 1}}: on the weighted mean of its gains

Each figure keeps its own workload (two shapes are never one "random"); the policy is policy/workload_champion.py.
"""

import math
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from redline.models.bench import Count
from redline.models.slug import Slug
from redline.models.strict import Strict

MAX_WORKLOADS = 8


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


class NamedWorkloads:
    """What a campaign and an A/B share of their workload fields (`workload`, `workloads`, `combine`, declared by
    each in its own order): the shapes in order, one by name, the longest, and the one check of them all."""

    if TYPE_CHECKING:
        workload: WorkloadSpec | None
        workloads: dict[str, WorkloadSpec] | None
        combine: Combine

    def shapes(self) -> list[NamedShape]:
        """Every workload a server is benched on, in order: (name, shape); one unnamed where workload: is given."""
        if self.workloads is not None:
            return list(self.workloads.items())
        assert self.workload is not None  # check_workloads holds one or the other
        return [(None, self.workload)]

    def shape(self, name: str | None) -> WorkloadSpec:
        return dict(self.shapes())[name]

    @property
    def longest(self) -> int:
        """The most tokens one request of any workload holds (max_model_len must fit them)."""
        return max(w.tokens for _, w in self.shapes())

    def check_workloads(self) -> None:
        """One way to say the workloads, and a combine that names them (ValueError, naming the field)."""
        if (self.workload is None) == (self.workloads is None):
            raise ValueError("workload: give workload: (one shape) or workloads: (several, each named), not both")
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
    "most_tokens",
    "Weights",
    "WorkloadSpec",
    "Workloads",
]
