"""Engines: one interface (`Engine`), one package per engine; pure argv builders and readers, no I/O.

    engine = get_engine("vllm")            # InputError naming the known engines otherwise
    engine.serve_argv(config)              # the boot command
    engine.parse_boot_log(text)            # BootSignals

Engines are loaded on first use, so redline.models may name engines without
importing them. Adding one is a package under engines/ and one line in _ENGINES.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, Field

from redline.errors import InputError

if TYPE_CHECKING:
    from redline.engines.base import Engine

DEFAULT_ENGINE = "vllm"
# name -> "module:class"
_ENGINES = {
    "vllm": "redline.engines.vllm.engine:VLLM",
    "sglang": "redline.engines.sglang.engine:SGLang",
}


def engine_names() -> tuple[str, ...]:
    return tuple(sorted(_ENGINES))


def check_engine_name(name: str) -> str:
    """name, if an engine of that name exists; else InputError listing those that do."""
    if name not in _ENGINES:
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
    str, AfterValidator(_known_engine), Field(max_length=40, json_schema_extra={"enum": list(_ENGINES)})
]


@cache
def get_engine(name: str = DEFAULT_ENGINE) -> Engine:
    module, _, cls = _ENGINES[check_engine_name(name)].partition(":")
    return getattr(importlib.import_module(module), cls)()  # type: ignore[no-any-return]


__all__ = ["DEFAULT_ENGINE", "EngineName", "check_engine_name", "engine_names", "get_engine"]
