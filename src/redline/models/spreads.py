"""noise.yml: the boot-to-boot spreads redline measured, per model, engine, GPU and host, so a campaign that boots no
replicate (or an A/B of one trial) is judged by a band measured on earlier boots of its setup, said so, instead of
the 3% default assumed.

    Spread(model="tiny", engine="vllm", hardware="cpu", host="cpu-a", metric="output_throughput",
           run="campaigns/seqs.yml", cv=0.19, df=2)
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from redline.models.strict import Frozen, Strict


class Setup(Frozen):
    """What a boot-to-boot spread is kept by: the model, the engine, the GPU (its name, or `cpu`) and the host."""

    model: Annotated[str, Field(max_length=1024)]
    engine: Annotated[str, Field(max_length=64)]
    hardware: Annotated[str, Field(max_length=256)]
    host: Annotated[str, Field(max_length=255, description="the node's hostname, else its machine id; '' unknown")]

    def describe(self) -> str:
        return f"{self.model} on {self.engine}, {self.hardware}, host {self.host or '?'}"


class Spread(Setup):
    """One run's boot-to-boot spread of one metric on one setup: each boot's figure relative to its point's mean."""

    metric: Annotated[str, Field(max_length=64)]
    run: Annotated[str, Field(max_length=1024, description="the campaign or A/B whose boots measured it")]
    cv: Annotated[float, Field(ge=0, le=100, description="the coefficient of variation between boots")]
    df: Annotated[int, Field(ge=1, le=1 << 20, description="its degrees of freedom: boots - configs")]
    at: datetime


class SpreadsFile(Strict):
    spreads: Annotated[list[Spread], Field(max_length=1 << 14)] = []


__all__ = ["Setup", "Spread", "SpreadsFile"]
