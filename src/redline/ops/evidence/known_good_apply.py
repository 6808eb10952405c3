"""Applying known-good entries: the hook ladder_init, campaign_run and ab_run call before they boot anything.

    identity = await identify(target, engine)                 # the GPU name and the engine's version there
    config, use = apply_known_good(config, registry_path(workspace), identity=identity, engine="vllm")
    use.note                                                   # what was applied, or why nothing was

A matching entry (same model, hardware and engine version) is applied by default; `skip=True`
turns it off, and the output says so either way. A knob the caller set wins over the entry whatever its value,
and a campaign's cells are planned from the config the entry leaves (policy/campaign.py cell_config), so the
regime, the boot and the benches are what runs. The registry is a workspace file, so every entry's flags and env
pass its engine's allowlist whenever it is read, and the refusal names the entry. The decisions are
policy/known_good.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.ledger.edited_yaml import EditedFile
from redline.models.known_good import KnownGoodEntry, KnownGoodFile, KnownGoodUse
from redline.models.serve import ServeConfig
from redline.ops.evidence.context import local_model_files
from redline.ops.evidence.versions import EngineVersions, engine_version_on, parse_version
from redline.ops.session import Progress, say
from redline.ops.workspace import workspace_of  # re-exported: where a file's registry is
from redline.policy import known_good as kg
from redline.policy.known_good import TURNED_OFF
from redline.targets import HostInfo, Target

REGISTRY_FILE = EditedFile(
    "known-good.yml",
    KnownGoodFile,
    "known-good registry",
    "redline known-good registry: the serve flags a model needs on a hardware and engine version to boot or\n"
    "survive load, why, and the evidence. ladder_init, campaign_run and ab_run apply a matching entry by\n"
    "default. Comments you add here are kept.",
)


def registry_path(workspace: Path) -> Path:
    return workspace / REGISTRY_FILE.name


def admit_entry(entry: KnownGoodEntry, where: str) -> None:
    """Refuse an entry whose flags or env its engine's allowlist refuses (no widening: the registry is a workspace
    file, and a widening is the server config's), naming the entry."""
    probe = ServeConfig(model=entry.model, max_model_len=1, extra_flags=entry.flags, env=entry.env)
    get_engine(entry.engine).admit_written(
        probe,
        f"{where}known-good entry {entry.key().describe()}",
        "an entry holds only the flags and env the engine's allowlist admits: fix or remove it",
    )


def read_entries(path: Path) -> list[KnownGoodEntry]:
    """The registry's entries, each admitted by its engine's allowlist (a planted entry is refused by name)."""
    entries = REGISTRY_FILE.read(path).entries
    for entry in entries:
        admit_entry(entry, f"{path}: ")
    return entries


@dataclass(frozen=True)
class Identity:
    """What a run's known-good key needs from the target: its hardware, the engine's version there."""

    hardware: str
    engine_version: str | None
    host: HostInfo | None = None
    why: str = ""  # why the version is unknown


async def identify(
    target: Target, engine: Engine, versions: EngineVersions | None = None, progress: Progress | None = None
) -> Identity:
    """The target's hardware and the engine's version there (kept in `versions` for the session; none: asked)."""
    await say(progress, 0.1, f"reading {target.name}: its GPUs")
    host = await target.host_info()
    version, why = await (versions or EngineVersions()).on(target, engine, progress)
    return Identity(kg.hardware_key(host.gpus[0].name if host.gpus else None), version, host, why)


def _find(
    path: Path,
    model: str,
    config_hash: str | None,
    identity: Identity,
    engine: str,
) -> kg.Found:
    """The entry for this run, and how its version matched; or None and why (each entry of the model that exists
    but does not match, named with the field that differed)."""
    if identity.engine_version is None:
        return kg.Found(None, f"no known-good entry looked up: the engine's version is unknown ({identity.why})")
    run = kg.Run(model, config_hash, identity.hardware, engine, identity.engine_version)
    found = kg.find(read_entries(path), run)
    if found.entry is None:
        why = f": {found.note}" if found.note else ""
        return kg.Found(None, f"no known-good entry for {run.describe()} in {path.name}{why}")
    return found


def found_for(
    registry: Path, model: str, config_hash: str | None, identity: Identity, engine: str, *, skip: bool = False
) -> kg.Found:
    """The entry of this run (or why none; turned off where asked): policy/known_good.py use_entry applies it."""
    return kg.Found(None, TURNED_OFF) if skip else _find(registry, model, config_hash, identity, engine)


def apply_known_good(
    config: ServeConfig,
    registry: Path,
    *,
    identity: Identity,
    engine: str,
    config_hash: str | None = None,
    skip: bool = False,
) -> tuple[ServeConfig, KnownGoodUse]:
    """config with the matching entry applied (flags, env, and the knobs the caller did not set: its
    model_fields_set), and what was done."""
    return kg.use_entry(config, found_for(registry, config.model, config_hash, identity, engine, skip=skip))


def apply_known_good_to_fixed(
    fixed: Mapping[str, Any],
    given: Iterable[str],
    registry: Path,
    *,
    model: str,
    config_hash: str | None,
    identity: Identity,
    engine: str,
    skip: bool = False,
    never: Iterable[str] = (),
) -> tuple[dict[str, Any], KnownGoodUse]:
    """A ladder's fixed knobs with the matching entry applied (the knobs in `never` are the climb's own)."""
    if skip:
        return dict(fixed), KnownGoodUse(applied=False, note=TURNED_OFF)
    found = _find(registry, model, config_hash, identity, engine)
    entry = found.entry
    if entry is None:
        return dict(fixed), KnownGoodUse(applied=False, note=found.note)
    flags, fa, fk = kg.apply_flags(list(fixed.get("extra_flags", [])), entry.flags)
    env, ea, ek = kg.apply_env(fixed.get("env", {}), entry.env)
    knobs, ka, kk = kg.apply_knobs(fixed, entry.knobs, given, skip=never)
    added, kept = fa + ea + ka, fk + ek + kk
    return {**knobs, "extra_flags": flags, "env": env}, KnownGoodUse(
        applied=True, entry=entry.key(), added=added, kept=kept, note=kg.applied_note(entry, added, kept, found.note)
    )


def default_registry(path: Path) -> Path:
    return registry_path(workspace_of(Path(path).resolve()))


def apply_to_ladder(
    fixed: Mapping[str, Any],
    given: Iterable[str],
    registry: Path,
    *,
    model: str,
    gpu_name: str | None,
    engine: str,
    engine_version: str | None,
    skip: bool = False,
    never: Iterable[str] = (),
) -> tuple[dict[str, Any], KnownGoodUse]:
    """A new ladder's fixed knobs with the matching entry applied: its GPU and engine version are the request's."""
    if not skip and (not gpu_name or not engine_version):
        missing = " and ".join(n for n, v in (("gpu_name", gpu_name), ("engine_version", engine_version)) if not v)
        return dict(fixed), KnownGoodUse(
            applied=False,
            note=(
                f"no known-good entry looked up: give {missing} to ladder_init so the entry for this model, GPU and "
                "engine version can be applied"
            ),
        )
    identity = Identity(kg.hardware_key(gpu_name), engine_version)
    return apply_known_good_to_fixed(
        fixed,
        given,
        registry,
        model=model,
        identity=identity,
        engine=engine,
        config_hash=local_model_files(model).config_hash,
        skip=skip,
        never=never,
    )


def known_good_outlook(registry: Path, model: str, engines: Iterable[str]) -> str:
    """What a run will do with the registry for this model, read without asking the target (campaign_init)."""
    return kg.outlook(read_entries(registry), model, local_model_files(model).config_hash, engines)


def recorded_for(
    config: ServeConfig,
    registry: Path,
    *,
    hardware: str,
    engine: str,
    engine_version: str | None,
    config_hash: str | None = None,
) -> KnownGoodEntry | None:
    """The entry that records this config as known-good: same key, and everything it names is in the config."""
    if engine_version is None:
        return None
    entry = kg.lookup(
        read_entries(registry),
        model=config.model,
        config_hash=config_hash,
        hardware=hardware,
        engine=engine,
        engine_version=engine_version,
    )
    return entry if entry is not None and kg.holds(config, entry) else None


__all__ = [
    "Identity",
    "REGISTRY_FILE",
    "TURNED_OFF",
    "admit_entry",
    "apply_known_good",
    "apply_known_good_to_fixed",
    "apply_to_ladder",
    "default_registry",
    "engine_version_on",
    "found_for",
    "identify",
    "known_good_outlook",
    "parse_version",
    "read_entries",
    "recorded_for",
    "registry_path",
    "workspace_of",
]
