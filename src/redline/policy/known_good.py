"""Known-good entries, as pure functions: which entry matches a run, and what applying it changes.

An entry's flags and env are added where the config lacks them; its knobs are set where the
config left them at their default. What the config already sets otherwise is kept, and said.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from redline.models.known_good import NO_GPU, KnownGoodEntry, KnownGoodKey
from redline.models.serve import ServeConfig


def hardware_key(gpu_name: str | None) -> str:
    """The hardware an entry is keyed by: the GPU name, or `cpu` on a host without one."""
    return gpu_name.strip() if gpu_name and gpu_name.strip() else NO_GPU


def matches(
    entry: KnownGoodEntry, *, model: str, config_hash: str | None, hardware: str, engine: str, engine_version: str
) -> bool:
    """Same model (by name, or by config.json hash), hardware, engine and engine version."""
    same_model = entry.model == model or bool(
        entry.model_config_hash and config_hash and entry.model_config_hash == config_hash
    )
    return (
        same_model
        and entry.hardware.lower() == hardware.lower()
        and entry.engine == engine
        and entry.engine_version == engine_version
    )


def lookup(
    entries: Iterable[KnownGoodEntry],
    *,
    model: str,
    config_hash: str | None,
    hardware: str,
    engine: str,
    engine_version: str,
) -> KnownGoodEntry | None:
    """The matching entry (keys are unique, so at most one)."""
    return next(
        (
            e
            for e in entries
            if matches(
                e, model=model, config_hash=config_hash, hardware=hardware, engine=engine, engine_version=engine_version
            )
        ),
        None,
    )


def same_key(a: KnownGoodKey, b: KnownGoodKey) -> bool:
    return (a.model, a.hardware.lower(), a.engine, a.engine_version) == (
        b.model,
        b.hardware.lower(),
        b.engine,
        b.engine_version,
    )


def _flag_name(flag: str) -> str:
    return flag.split("=", 1)[0]


def apply_flags(flags: list[str], wanted: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
    """flags with each wanted flag added unless one of its name is there; (flags, added, kept)."""
    out, added, kept = list(flags), [], []
    names = {_flag_name(f): f for f in flags}
    for flag in wanted:
        have = names.get(_flag_name(flag))
        if have is None:
            out.append(flag)
            added.append(f"flag {flag}")
        elif have != flag:
            kept.append(f"flag {have} (the entry says {flag})")
    return out, added, kept


def apply_env(env: Mapping[str, str], wanted: Mapping[str, str]) -> tuple[dict[str, str], list[str], list[str]]:
    out, added, kept = dict(env), [], []
    for name, value in wanted.items():
        if name not in out:
            out[name] = value
            added.append(f"env {name}={value}")
        elif out[name] != value:
            kept.append(f"env {name}={out[name]} (the entry says {value})")
    return out, added, kept


def apply_knobs(
    knobs: Mapping[str, Any], wanted: Mapping[str, Any], set_fields: Iterable[str], skip: Iterable[str] = ()
) -> tuple[dict[str, Any], list[str], list[str]]:
    """knobs with each wanted knob set where the config did not set it (set_fields) to another value."""
    out, added, kept = dict(knobs), [], []
    given, skipped = set(set_fields), set(skip)
    for name, value in wanted.items():
        if name in skipped:
            continue
        if name in given and out.get(name) != value:
            kept.append(f"{name} {out.get(name)!r} (the entry says {value!r})")
        elif out.get(name) != value:
            out[name] = value
            added.append(f"{name} {value!r}")
    return out, added, kept


def at_default(config: ServeConfig) -> set[str]:
    """The knobs a config set away from their default: the ones an entry must not override."""
    return {
        name
        for name, info in ServeConfig.model_fields.items()
        if info.is_required() or getattr(config, name) != info.default
    }


def apply_entry(
    config: ServeConfig,
    entry: KnownGoodEntry,
    set_fields: Iterable[str] | None = None,
    *,
    at_default_only: bool = False,
) -> tuple[ServeConfig, list[str], list[str]]:
    """config with the entry's flags, env and knobs; (config, added, kept).

    A knob is set where the caller did not set it: set_fields names those it did (default: the model's own
    record of the fields given), or with at_default_only, every knob away from its default counts as set.
    """
    given = (
        at_default(config) if at_default_only else set(config.model_fields_set if set_fields is None else set_fields)
    )
    flags, fa, fk = apply_flags(config.extra_flags, entry.flags)
    env, ea, ek = apply_env(config.env, entry.env)
    knobs, ka, kk = apply_knobs(config.model_dump(), entry.knobs, given)
    updated = ServeConfig.model_validate({**knobs, "extra_flags": flags, "env": env})
    return updated, fa + ea + ka, fk + ek + kk


def holds(config: ServeConfig, entry: KnownGoodEntry) -> bool:
    """Everything the entry names is in the config: its flags, env and knobs."""
    return (
        set(entry.flags) <= set(config.extra_flags)
        and all(config.env.get(k) == v for k, v in entry.env.items())
        and all(getattr(config, k) == v for k, v in entry.knobs.items())
    )


__all__ = [
    "apply_entry",
    "apply_env",
    "apply_flags",
    "apply_knobs",
    "at_default",
    "hardware_key",
    "holds",
    "lookup",
    "matches",
    "same_key",
]
