"""known-good.yml: the serve flags a model needs on a hardware and engine version to boot or survive load.

Each entry is keyed by model, hardware (the GPU name as nvidia-smi prints it, or `cpu`), engine and
engine version; it says why, and names its evidence (a ladder rung or ceiling, a campaign cell, an A/B).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, field_validator

from redline.engines.names import DEFAULT_ENGINE, EngineName
from redline.models.serve import ENV_NAME_RE, MODEL_RE, Flags, ServeConfig
from redline.models.strict import Strict

NO_GPU = "cpu"  # the hardware key of a host without a GPU
# Knobs an entry may pin: every serve knob but the model, where the server listens, and the lists held apart.
KNOBS = tuple(f for f in ServeConfig.model_fields if f not in ("model", "host", "port", "extra_flags", "env"))


Why = Annotated[str, Field(min_length=1, max_length=2000)]


class Evidence(Strict):
    """What proves an entry: a file in the workspace and the item in it."""

    kind: Literal["ladder_rung", "ladder_ceiling", "campaign_cell", "ab_arm", "note"]
    ref: Annotated[str, Field(min_length=1, max_length=1024, description="the file, relative to the workspace")]
    item: Annotated[str | None, Field(max_length=200, description="the rung, cell or arm in it")] = None
    note: Annotated[str | None, Field(max_length=2000)] = None


class KnownGoodKey(Strict):
    model: Annotated[str, Field(min_length=1, max_length=4096, pattern=MODEL_RE.pattern)]
    hardware: Annotated[str, Field(min_length=1, max_length=200, description=f"the GPU name, or {NO_GPU}")]
    engine: EngineName = DEFAULT_ENGINE
    engine_version: Annotated[str, Field(min_length=1, max_length=64)]

    def describe(self) -> str:
        return f"{self.model} on {self.hardware}, {self.engine} {self.engine_version}"


class KnownGoodEntry(KnownGoodKey):
    model_config_hash: Annotated[
        str | None,
        Field(max_length=80, description="sha256 of the model's config.json: matches the same model at another path"),
    ] = None
    flags: Flags = []
    env: Annotated[dict[str, str], Field(max_length=64)] = {}
    knobs: Annotated[dict[str, Any], Field(description=f"serve knobs it needs: {', '.join(KNOBS)}")] = {}
    why: Why
    evidence: Annotated[list[Evidence], Field(min_length=1)]
    recorded_at: datetime

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        bad = [k for k in env if not ENV_NAME_RE.match(k)]
        if bad:
            raise ValueError(f"environment names must look like NAME_1: {bad}")
        return env

    @field_validator("knobs")
    @classmethod
    def _knobs_are_serve_knobs(cls, knobs: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(knobs) - set(KNOBS))
        if unknown:
            raise ValueError(f"unknown knobs {unknown}; an entry may pin {', '.join(KNOBS)}")
        ServeConfig.model_validate({"model": "m", "max_model_len": 1, **knobs})  # ServeConfig's own checks
        return knobs

    def key(self) -> KnownGoodKey:
        return KnownGoodKey(
            model=self.model, hardware=self.hardware, engine=self.engine, engine_version=self.engine_version
        )


class KnownGoodFile(Strict):
    schema_version: Literal[1] = 1
    entries: list[KnownGoodEntry] = []


class KnownGoodUse(Strict):
    """What a run did with the registry: the entry it applied (and what that added), or why none."""

    applied: bool
    entry: KnownGoodKey | None = None
    added: list[str] = Field([], description="what the entry added to the serve config")
    kept: list[str] = Field([], description="what the entry names that the config already sets otherwise (kept)")
    note: str


class KnownGoodRecorded(Strict):
    path: str
    replaced: bool = Field(description="an entry of this key was there and is updated in place")
    entry: KnownGoodEntry
    left_out: list[str] = Field(
        [],
        description=(
            "knobs the source booted with that the entry does not record: a gate's pin or a bench setting "
            "(name one in keep_knobs to keep it)"
        ),
    )
    note: str = Field("", description="what was recorded and what was left out, and why")


class KnownGoodFound(Strict):
    found: bool
    entry: KnownGoodEntry | None = None
    note: str


class KnownGoodList(Strict):
    path: str
    entries: list[KnownGoodEntry]


class KnownGoodAnswer(RootModel[KnownGoodRecorded | KnownGoodFound | KnownGoodList]):
    """known_good_config's answer: exactly what its verb's tool answers (known_good_record, known_good_lookup or
    known_good_list), told apart by their fields (replaced, found, entries)."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


__all__ = [
    "Evidence",
    "KNOBS",
    "KnownGoodAnswer",
    "KnownGoodEntry",
    "KnownGoodFile",
    "KnownGoodFound",
    "KnownGoodKey",
    "KnownGoodList",
    "KnownGoodRecorded",
    "KnownGoodUse",
    "NO_GPU",
]
