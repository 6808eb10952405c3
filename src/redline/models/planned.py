"""One config an experiment boots, as it will boot: what a campaign's cell and an A/B's arm share in a plan (the
prepare pipeline's output, ops/experiment/prepare.py), and what the memory model predicts of it before it boots."""

from typing import Annotated, Literal

from pydantic import Field

from redline.models.memory import PredictedKv
from redline.models.serve import ServeConfig
from redline.models.strict import Strict


class CellPrediction(PredictedKv):
    """A config's KV cache as the memory model predicts it on the target's GPU (a campaign's cell, an A/B's arm),
    and whether its workload fits."""

    needed_tokens: int = Field(
        description="the most KV tokens the benches hold at once: each workload's top concurrency x its requests' "
        "whole length, the largest"
    )
    feasible: Literal["yes", "at risk", "no"] = Field(
        description="no: even the band's high end holds fewer tokens than the workload or one max_model_len request; "
        "at risk: only the band's high end holds them"
    )
    why: str


Submits = Annotated[
    str | None,
    Field(
        description="dry run, on a target that submits to a cluster: the exact kubectl/helm commands and manifests "
        "one boot submits (nothing was submitted)"
    ),
]


class PlannedConfig(Strict):
    """One config as it will boot: its engine, its serve config after the known-good entry and the gates, its boot
    command, what of the widening it uses, and its predicted KV cache."""

    name: str
    baseline: bool
    engine: str = Field(description="the engine it boots")
    serve: ServeConfig = Field(description="after the known-good entry and the gates")
    gates: list[str] = Field([], description="what the methodology gates changed in it, and why")
    widened: list[str] = Field([], description="what of the server config's allowlist widening it uses")
    bench_backend: str | None = Field(None, description="the backend its bench command pins")
    boot_command: list[str]
    submits: Submits = None
    predicted: CellPrediction | None = Field(
        None, description="its KV cache as the memory model predicts it on the target's GPU, against the workload"
    )


__all__ = ["CellPrediction", "PlannedConfig", "Submits"]
