"""The knobs of one server boot."""

import re
from collections.abc import Mapping, Sequence
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

# An engine flag: `--name` or `--name=value`. A bare value would be taken by the
# engine's argparse as belonging to the flag before it, so values ride after `=`.
FLAG_RE = re.compile(r"^--[a-z0-9][a-z0-9._-]*(=[^\x00\n\r]*)?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A model is a path or a hub id: no leading dash (it would read as a flag), no control chars.
MODEL_RE = re.compile(r"^[^-\x00-\x1f][^\x00-\x1f]*$")


def _flag(value: str) -> str:
    if not FLAG_RE.match(value):
        raise ValueError(f"{value!r} is not an engine flag: write it as --name or --name=value (lowercase name)")
    return value


Flag = Annotated[str, AfterValidator(_flag)]
Flags = Annotated[list[Flag], Field(max_length=64)]

DUMMY = "dummy"  # the load format that reads no weights: random ones, a boot that proves nothing of them


class Widening(BaseModel):
    """What a person allows one engine beyond redline's allowlist, on purpose, in the server config.

    Every rung or cell booted with any of it records which parts it used.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    flags: Annotated[list[Annotated[str, Field(pattern=r"^--[a-z0-9][a-z0-9_-]*$")]], Field(max_length=64)] = []
    env: Annotated[list[Annotated[str, Field(pattern=ENV_NAME_RE.pattern)]], Field(max_length=64)] = []


# Each engine's widening, by engine name, as the server config's `widen:` holds it: a campaign or an A/B whose
# cells or arms boot more than one engine widens each by its own.
Widenings = Mapping[str, Widening]


class ServeConfig(BaseModel):
    """One boot of an engine: everything that changes what the boot log says."""

    model_config = ConfigDict(extra="forbid")

    model: Annotated[str, Field(min_length=1, max_length=4096, description="Model path or hub id")]
    max_model_len: Annotated[int, Field(gt=0, le=1 << 26)]
    max_num_batched_tokens: Annotated[int | None, Field(gt=0, le=1 << 26)] = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    kv_cache_dtype: Annotated[str | None, Field(pattern=r"^[a-z0-9_]+$", max_length=32)] = None
    enforce_eager: bool = False
    cudagraph_mode: Annotated[str | None, Field(pattern=r"^[A-Z_]+$", max_length=40)] = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    max_num_seqs: Annotated[int | None, Field(gt=0, le=1 << 20)] = None
    tensor_parallel_size: Annotated[int, Field(ge=1, le=1024)] = 1
    data_parallel_size: Annotated[int, Field(ge=1, le=1024)] = 1
    pipeline_parallel_size: Annotated[int, Field(ge=1, le=1024)] = 1
    load_format: Annotated[str | None, Field(pattern=r"^[a-z0-9_]+$", max_length=32)] = None
    host: Annotated[str, Field(pattern=r"^[A-Za-z0-9.:\[\]-]+$", max_length=255)] = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    extra_flags: Annotated[list[str], Field(max_length=64)] = []
    env: Annotated[dict[str, str], Field(max_length=64)] = {}

    @field_validator("model")
    @classmethod
    def _model_is_not_a_flag(cls, value: str) -> str:
        if not MODEL_RE.match(value):
            raise ValueError("model must be a path or hub id, not starting with '-' and without control characters")
        return value

    @field_validator("extra_flags")
    @classmethod
    def _flags_look_like_flags(cls, flags: list[str]) -> list[str]:
        for flag in flags:
            if not FLAG_RE.match(flag):
                raise ValueError(
                    f"extra flag {flag!r} is not an engine flag: write it as --name or --name=value "
                    "(lowercase name, no spaces before '=')"
                )
        return flags

    @field_validator("env")
    @classmethod
    def _env_names_are_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not ENV_NAME_RE.match(name):
                raise ValueError(f"environment variable name {name!r} must match [A-Za-z_][A-Za-z0-9_]*")
            if "\x00" in value or len(value) > 4096:
                raise ValueError(f"environment variable {name} has a NUL byte or is over 4096 characters")
        return env


def gpus_of(config: ServeConfig) -> int:
    """The GPUs one boot of config uses: tensor x pipeline x data parallel size."""
    return config.tensor_parallel_size * config.pipeline_parallel_size * config.data_parallel_size


def is_eager(config: ServeConfig) -> bool:
    """The boot runs without CUDA graphs: enforce_eager, or cudagraph_mode NONE."""
    return config.enforce_eager or config.cudagraph_mode == "NONE"


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of `flag` in argv (`--flag v` or `--flag=v`), as the command itself names it."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None
