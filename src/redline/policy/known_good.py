"""Known-good entries, as pure functions: which entry matches a run, and what applying it changes.

An entry's flags and env are added where the config lacks them; its knobs are set where the caller did not set
them (issue 19, class 4): a knob the caller set wins whatever its value, its default too (pydantic's
model_fields_set of the config as the caller gave it). What the config already sets otherwise is kept, and said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from redline.models.known_good import KNOBS, NO_GPU, KnownGoodEntry, KnownGoodKey, KnownGoodUse
from redline.models.serve import ServeConfig

TURNED_OFF = "known-good entries not applied: turned off by the request"


def hardware_key(gpu_name: str | None) -> str:
    """The hardware an entry is keyed by: the GPU name, or `cpu` on a host without one."""
    return gpu_name.strip() if gpu_name and gpu_name.strip() else NO_GPU


# ---- engine versions, compared as releases ----------------------------------------------------------------------

_RELEASE_RE = re.compile(r"^v?(\d+(?:\.\d+)*)(.*)$")


def release_of(version: str) -> tuple[tuple[int, ...], str]:
    """A version as its release: its numbers (trailing zeros dropped: 0.32 is 0.32.0) and what follows them (rc1,
    .post1, .dev3), without a local build suffix (+cpu, +cu124: the same release, built for another device)."""
    public = version.strip().split("+", 1)[0].lower()
    m = _RELEASE_RE.match(public)
    if m is None:
        return (), public
    numbers = tuple(int(n) for n in m.group(1).split("."))
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers = numbers[:-1]
    return numbers, m.group(2)


def same_release(a: str, b: str) -> bool:
    return release_of(a) == release_of(b)


def _local(version: str) -> str:
    return version.split("+", 1)[1] if "+" in version else ""


def version_note(entry_version: str, run_version: str) -> str:
    """How a run's version matched an entry's written otherwise ("" when written the same)."""
    if entry_version == run_version:
        return ""
    suffixes = [f"+{s}" for s in dict.fromkeys((_local(entry_version), _local(run_version))) if s]
    why = (
        f"the local build suffix {' and '.join(suffixes)} is the same release"
        if suffixes
        else "the same release, written another way"
    )
    return f"engine version {run_version} matched the entry's {entry_version} ({why})"


# ---- which entry a run matches, and why the others do not ------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """The key a run (or a lookup) asks for: an entry must match it in every field."""

    model: str
    config_hash: str | None
    hardware: str
    engine: str
    engine_version: str

    def describe(self) -> str:
        return f"{self.model} on {self.hardware}, {self.engine} {self.engine_version}"


@dataclass(frozen=True)
class Found:
    """The entry a run matches (or None), and a note: how its version matched, or why each entry of the same
    model did not (the field that differed, with both values)."""

    entry: KnownGoodEntry | None
    note: str


def _same_model(entry: KnownGoodEntry, run: Run) -> bool:
    """The same model: by name, or by config.json hash (the same model at another path)."""
    return entry.model == run.model or bool(
        entry.model_config_hash and run.config_hash and entry.model_config_hash == run.config_hash
    )


def differences(entry: KnownGoodEntry, run: Run) -> list[str]:
    """Each field an entry of the run's model differs in, with both values: [] is a match."""
    out = []
    if entry.model_config_hash and run.config_hash and entry.model_config_hash != run.config_hash:
        out.append(f"model hash {entry.model_config_hash[:12]} (this model's config.json: {run.config_hash[:12]})")
    if entry.hardware.lower() != run.hardware.lower():
        out.append(f"hardware {entry.hardware} (this run: {run.hardware})")
    if entry.engine != run.engine:
        out.append(f"engine {entry.engine} (this run: {run.engine})")
    if not same_release(entry.engine_version, run.engine_version):
        out.append(f"engine version {entry.engine_version} (this run: {run.engine_version})")
    return out


def find(entries: Iterable[KnownGoodEntry], run: Run) -> Found:
    """The entry that matches the run (one written with the run's own version first), or why none of the entries
    of its model does; a note of "" when nothing of this model is there."""
    near = sorted((e for e in entries if _same_model(e, run)), key=lambda e: e.engine_version != run.engine_version)
    for entry in near:
        if not differences(entry, run):
            return Found(entry, version_note(entry.engine_version, run.engine_version))
    misses = [f"{e.key().describe()} differs in {'; '.join(differences(e, run))}" for e in near]
    return Found(None, ("; ".join(misses)))


def outlook(entries: Iterable[KnownGoodEntry], model: str, config_hash: str | None, engines: Iterable[str]) -> str:
    """What a run will do with the registry for a model before the target is asked (its hardware and engine version
    decide which entry, if any, applies): the model's entries for these engines, named; or that there are none."""
    wanted = set(engines)
    probe = Run(model, config_hash, "", "", "")
    mine = [e for e in entries if _same_model(e, probe) and e.engine in wanted]
    if not mine:
        return f"no known-good entry for {model} ({', '.join(sorted(wanted))}): a run applies none"
    named = "; ".join(e.key().describe() for e in mine)
    return (
        f"known-good entries for this model: {named}. campaign_run applies the one that matches the target's hardware "
        "and engine version, which it reads from the target (not read here): campaign_run with dry_run=true shows "
        "every cell with it applied, or why none matched"
    )


def matches(
    entry: KnownGoodEntry, *, model: str, config_hash: str | None, hardware: str, engine: str, engine_version: str
) -> bool:
    """Same model (by name, or by config.json hash; not a name whose config.json changed), hardware, engine and
    engine release."""
    run = Run(model, config_hash, hardware, engine, engine_version)
    return _same_model(entry, run) and not differences(entry, run)


def lookup(
    entries: Iterable[KnownGoodEntry],
    *,
    model: str,
    config_hash: str | None,
    hardware: str,
    engine: str,
    engine_version: str,
) -> KnownGoodEntry | None:
    """The matching entry (keys are unique by release, so at most one)."""
    return find(entries, Run(model, config_hash, hardware, engine, engine_version)).entry


def same_key(a: KnownGoodKey, b: KnownGoodKey) -> bool:
    """One key: the same model, hardware and engine, and the same release (0.32.0 and 0.32.0+cpu are one)."""
    return (a.model, a.hardware.lower(), a.engine) == (b.model, b.hardware.lower(), b.engine) and same_release(
        a.engine_version, b.engine_version
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
    config: ServeConfig, entry: KnownGoodEntry, set_fields: Iterable[str] | None = None
) -> tuple[ServeConfig, list[str], list[str]]:
    """config with the entry's flags, env and knobs; (config, added, kept).

    A knob is set where the caller did not set it: set_fields names those it did (default: the config's own record
    of the fields given, model_fields_set), whatever their value. The result keeps that record, plus what the
    entry set.
    """
    given = set(config.model_fields_set if set_fields is None else set_fields)
    flags, fa, fk = apply_flags(config.extra_flags, entry.flags)
    env, ea, ek = apply_env(config.env, entry.env)
    knobs, ka, kk = apply_knobs(config.model_dump(), entry.knobs, given)
    changed = {k: v for k, v in knobs.items() if k in config.model_fields_set or v != getattr(config, k)}
    updated = ServeConfig.model_validate({**changed, "extra_flags": flags, "env": env})
    return updated, fa + ea + ka, fk + ek + kk


def applied_note(entry: KnownGoodEntry, added: list[str], kept: list[str], matched: str = "") -> str:
    text = f"known-good entry {entry.key().describe()} applied"
    text += f": added {', '.join(added)}" if added else ": the config already had everything it names"
    text += f"; kept the config's own {', '.join(kept)}" if kept else ""
    return text + f" ({entry.why})" + (f"; {matched}" if matched else "")


def use_entry(config: ServeConfig, found: Found) -> tuple[ServeConfig, KnownGoodUse]:
    """config with the entry found applied (a knob the caller set wins), and what was done; or why none was."""
    if found.entry is None:
        return config, KnownGoodUse(applied=False, note=found.note)
    updated, added, kept = apply_entry(config, found.entry)
    note = applied_note(found.entry, added, kept, found.note)
    return updated, KnownGoodUse(applied=True, entry=found.entry.key(), added=added, kept=kept, note=note)


def one_account(uses: Mapping[str, KnownGoodUse], what: str) -> KnownGoodUse:
    """One account of what the registry did for every config of an experiment (`what`: an arm, a cell), each named
    where they differ."""
    notes = {u.note for u in uses.values()}
    first = next(iter(uses.values()))
    note = first.note if len(notes) == 1 else "; ".join(f"{what} {a}: {u.note}" for a, u in uses.items())
    entry = next((u.entry for u in uses.values() if u.entry is not None), None)
    added = sorted({f"{a}: {x}" if len(notes) > 1 else x for a, u in uses.items() for x in u.added})
    kept = sorted({f"{a}: {x}" if len(notes) > 1 else x for a, u in uses.items() for x in u.kept})
    return KnownGoodUse(applied=any(u.applied for u in uses.values()), entry=entry, added=added, kept=kept, note=note)


def shown_in_gates(use: KnownGoodUse) -> bool:
    """A use a plan's gates say: an entry applied, or the registry turned off by the request."""
    return use.applied or use.note == TURNED_OFF


def holds(config: ServeConfig, entry: KnownGoodEntry) -> bool:
    """Everything the entry names is in the config: its flags, env and knobs."""
    return (
        set(entry.flags) <= set(config.extra_flags)
        and all(config.env.get(k) == v for k, v in entry.env.items())
        and all(getattr(config, k) == v for k, v in entry.knobs.items())
    )


def run_knobs(
    run: ServeConfig, spec: ServeConfig, entry: KnownGoodEntry | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The knobs an entry recorded from a run keeps, and those it leaves out: it keeps what the run's own config
    (`spec`, as its campaign or A/B file wrote it) set, at the value the run booted with, and what the known-good
    entry of its key (`entry`) had added; any other knob the run booted with is a gate's pin or a bench setting
    (the max_num_seqs a campaign or an A/B pins to its top concurrency), never a need of the model."""
    kept: dict[str, Any] = {}
    left: list[str] = []
    own, booted = at_default(spec), at_default(run)
    for name in KNOBS:
        value = getattr(run, name)
        if name not in booted:
            continue
        if (name in own and getattr(spec, name) == value) or (entry is not None and entry.knobs.get(name) == value):
            kept[name] = value
        else:
            left.append(f"{name} {value!r}")
    return kept, left


__all__ = [
    "TURNED_OFF",
    "Found",
    "Run",
    "apply_entry",
    "apply_env",
    "apply_flags",
    "apply_knobs",
    "applied_note",
    "at_default",
    "differences",
    "find",
    "hardware_key",
    "holds",
    "lookup",
    "matches",
    "one_account",
    "outlook",
    "release_of",
    "run_knobs",
    "same_key",
    "same_release",
    "shown_in_gates",
    "use_entry",
    "version_note",
]
