"""The engines redline knows, by name: the registry, the default, and the field type that accepts one.

    check_engine_name("sglang")      # the name, or InputError listing the known engines
    engine: EngineName = DEFAULT_ENGINE

Names only, no engine code: redline.models names engines through this module, and the
Engine interface (engines/base.py) imports redline.models, so nothing here may import either.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from redline.errors import InputError

DEFAULT_ENGINE = "vllm"
# name -> "module:class" (get_engine in engines/__init__.py loads it on first use)
ENGINES = {
    "vllm": "redline.engines.vllm.engine:VLLM",
    "sglang": "redline.engines.sglang.engine:SGLang",
}


def engine_names() -> tuple[str, ...]:
    return tuple(sorted(ENGINES))


def check_engine_name(name: str) -> str:
    """name, if an engine of that name exists; else InputError listing those that do."""
    if name not in ENGINES:
        raise InputError(f"unknown engine {str(name)[:40]!r}: redline knows {', '.join(engine_names())}")
    return name


def _known_engine(name: str) -> str:
    """name, if the registry knows it; a ValueError (a validation error, not a crash) if not."""
    try:
        return check_engine_name(name)
    except InputError as exc:
        raise ValueError(str(exc)) from None


# An engine name the registry knows, as a field type: offered as a choice (an enum in JSON Schema).
EngineName = Annotated[
    str, AfterValidator(_known_engine), Field(max_length=40, json_schema_extra={"enum": list(ENGINES)})
]

__all__ = ["DEFAULT_ENGINE", "ENGINES", "EngineName", "check_engine_name", "engine_names"]
