"""Applying known-good entries: the hook ladder_init, campaign_run and ab_run call before they boot anything.

    identity = await identify(target, engine)                 # the GPU name and the engine's version there
    config, use = apply_known_good(config, registry_path(workspace), identity=identity, engine="vllm")
    use.note                                                   # what was applied, or why nothing was

A matching entry (same model, hardware and engine version) is applied by default; `skip=True`
turns it off, and the output says so either way. The decisions are policy/known_good.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.ledger.registry_file import read_registry
from redline.models.campaign_plan import CampaignPlan
from redline.models.known_good import NO_GPU, KnownGoodEntry, KnownGoodFile, KnownGoodUse
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.campaign.load import load
from redline.ops.evidence.context import local_model_files, model_files
from redline.ops.evidence.versions import EngineVersions, engine_version_on, parse_version
from redline.ops.session import Progress, say
from redline.ops.workspace import workspace_of  # re-exported: where a file's registry is
from redline.policy import known_good as kg
from redline.policy.campaign import boot_argv, cell_engine
from redline.targets import HostInfo, Target

REGISTRY = "known-good.yml"
WHAT = "known-good registry"
HEADER = (
    "redline known-good registry: the serve flags a model needs on a hardware and engine version to boot or\n"
    "survive load, why, and the evidence. ladder_init, campaign_run and ab_run apply a matching entry by\n"
    "default. Comments you add here are kept."
)
TURNED_OFF = "known-good entries not applied: turned off by the request"


def registry_path(workspace: Path) -> Path:
    return workspace / REGISTRY


def read_entries(path: Path) -> list[KnownGoodEntry]:
    return read_registry(path, KnownGoodFile, WHAT).entries


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
    version, why = await (versions or EngineVersions(reuse=False)).on(target, engine, progress)
    return Identity(kg.hardware_key(host.gpus[0].name if host.gpus else None), version, host, why)


def _note(entry: KnownGoodEntry, added: list[str], kept: list[str], matched: str = "") -> str:
    text = f"known-good entry {entry.key().describe()} applied"
    text += f": added {', '.join(added)}" if added else ": the config already had everything it names"
    text += f"; kept the config's own {', '.join(kept)}" if kept else ""
    return text + f" ({entry.why})" + (f"; {matched}" if matched else "")


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


def apply_known_good(
    config: ServeConfig,
    registry: Path,
    *,
    identity: Identity,
    engine: str,
    config_hash: str | None = None,
    skip: bool = False,
) -> tuple[ServeConfig, KnownGoodUse]:
    """config with the matching entry applied (flags, env, knobs left at their default), and what was done."""
    if skip:
        return config, KnownGoodUse(applied=False, note=TURNED_OFF)
    found = _find(registry, config.model, config_hash, identity, engine)
    entry = found.entry
    if entry is None:
        return config, KnownGoodUse(applied=False, note=found.note)
    updated, added, kept = kg.apply_entry(config, entry, at_default_only=True)
    return updated, KnownGoodUse(
        applied=True, entry=entry.key(), added=added, kept=kept, note=_note(entry, added, kept, found.note)
    )


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
        applied=True, entry=entry.key(), added=added, kept=kept, note=_note(entry, added, kept, found.note)
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


@dataclass(frozen=True)
class KnownGoodRun:
    """What a campaign run resolves once, before it plans: the registry, the target's identity, the model's hash
    and shape (its config.json, read there: the memory model predicts each cell from it)."""

    registry: Path
    identity: Identity
    config_hash: str | None = None
    skip: bool = False
    shape: ModelShape | None = None


async def known_good_run(
    registry: Path,
    target: Target,
    engine: Engine,
    model: str,
    *,
    skip: bool = False,
    versions: EngineVersions | None = None,
    progress: Progress | None = None,
) -> KnownGoodRun:
    files = await model_files(target, model)
    if skip:  # no entry is looked up; the host still names the GPU the cells are predicted on
        identity = Identity(NO_GPU, None, why="turned off", host=await target.host_info())
        return KnownGoodRun(registry, identity, None, skip, files.shape[0])
    identity = await identify(target, engine, versions, progress)
    return KnownGoodRun(registry, identity, files.config_hash, skip, files.shape[0])


async def campaign_known_good(
    path: Path,
    target: Target,
    skip: bool = False,
    workspace: Path | None = None,
    *,
    versions: EngineVersions | None = None,
    progress: Progress | None = None,
) -> dict[str, KnownGoodRun]:
    """The known-good run of each engine a campaign file's cells boot: its model and shape, the target's identity
    (each engine's version there, from `versions` when it holds it), the workspace registry."""
    loaded = load(path, workspace)
    engines = dict.fromkeys(cell_engine(loaded.campaign, cell) for cell in loaded.cells)
    registry = default_registry(Path(path))
    return {
        name: await known_good_run(
            registry, target, get_engine(name), loaded.base.model, skip=skip, versions=versions, progress=progress
        )
        for name in engines
    }


def known_good_outlook(registry: Path, model: str, engines: Iterable[str]) -> str:
    """What a run will do with the registry for this model, read without asking the target (campaign_init)."""
    return kg.outlook(read_entries(registry), model, local_model_files(model).config_hash, engines)


def apply_to_plan(
    plan: CampaignPlan,
    runs: Mapping[str, KnownGoodRun] | None,
    executables: Mapping[str, list[str]] | None,
) -> CampaignPlan:
    """A campaign's plan with the matching entry applied to every cell (its engine's run), said in the plan's gates
    and in each cell's it changed (the campaign hook: tools/campaign.plan_for calls it); a plan nothing applies to
    is left as it is."""
    if runs is None:
        return plan
    cells, notes = [], []
    for cell in plan.cells:
        run = runs.get(cell.engine)
        if run is None:
            cells.append(cell)
            continue
        config, use = apply_known_good(
            cell.serve,
            run.registry,
            identity=run.identity,
            engine=cell.engine,
            config_hash=run.config_hash,
            skip=run.skip,
        )
        if use.applied or run.skip:
            notes.append(use.note)
        gates = [*cell.gates, use.note] if use.applied else cell.gates
        argv = boot_argv(cell.name, get_engine(cell.engine), config, executables)
        cells.append(cell.model_copy(update={"serve": config, "gates": gates, "boot_command": argv}))
    return plan.model_copy(update={"cells": cells, "gates": [*plan.gates, *dict.fromkeys(notes)]})


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
    "HEADER",
    "Identity",
    "KnownGoodRun",
    "REGISTRY",
    "TURNED_OFF",
    "WHAT",
    "apply_known_good",
    "apply_known_good_to_fixed",
    "apply_to_ladder",
    "apply_to_plan",
    "campaign_known_good",
    "default_registry",
    "engine_version_on",
    "identify",
    "known_good_outlook",
    "known_good_run",
    "parse_version",
    "read_entries",
    "recorded_for",
    "registry_path",
    "workspace_of",
]
