"""Engines: one interface (`Engine`), one package per engine; pure argv builders and readers, no I/O.

    engine = get_engine("vllm")            # InputError naming the known engines otherwise
    engine.serve_argv(config)              # the boot command
    engine.parse_boot_log(text)            # BootSignals

Engines are loaded on first use. Their names (the registry, the default, the field type) are in
engines/names.py, which redline.models imports; adding an engine is a package under engines/ and
one line in ENGINES there.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

from redline.engines.detect import detect_engine as detect_engine  # which engine printed a log
from redline.engines.names import DEFAULT_ENGINE, ENGINES, EngineName, check_engine_name, engine_names

if TYPE_CHECKING:
    from redline.engines.base import Engine  # base imports redline.models, which imports names only


@cache
def get_engine(name: str = DEFAULT_ENGINE) -> Engine:
    module, _, cls = ENGINES[check_engine_name(name)].partition(":")
    return getattr(importlib.import_module(module), cls)()  # type: ignore[no-any-return]


__all__ = ["DEFAULT_ENGINE", "EngineName", "check_engine_name", "engine_names", "get_engine"]
