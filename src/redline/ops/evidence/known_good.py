"""known_good_record, known_good_lookup, known_good_list: the known-good registry (known-good.yml) as operations.

    known_good_record(workspace, KnownGoodRecordRequest(from_ladder="ladders/l8b.yml"))   # a ceiling, in one call
    known_good_record(workspace, KnownGoodRecordRequest(from_ab="fp8kv", arm="fp8", why="..."))  # a champion
    known_good_lookup(workspace, KnownGoodLookupRequest(model=..., hardware="NVIDIA H200", engine_version="0.26.0"))

An entry is keyed by model, hardware and engine version; recording a key that is there updates
that entry in place (comments kept).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from redline.errors import InputError, RedlineError
from redline.inputs import explain
from redline.ledger import read_ladder
from redline.ledger.registry_file import update_registry
from redline.models.known_good import (
    KNOBS,
    NO_GPU,
    Evidence,
    KnownGoodEntry,
    KnownGoodFile,
    KnownGoodFound,
    KnownGoodList,
    KnownGoodRecorded,
)
from redline.models.serve import ServeConfig
from redline.ops.evidence.context import local_model_files
from redline.ops.evidence.known_good_apply import HEADER, REGISTRY, WHAT, read_entries, registry_path
from redline.ops.evidence.sources import Resolved, from_ab, from_cell
from redline.ops.requests_rigor import KnownGoodListRequest, KnownGoodLookupRequest, KnownGoodRecordRequest
from redline.ops.workspace import inside, relative
from redline.policy import known_good as kg


def config_knobs(config: ServeConfig, leave: tuple[str, ...] = ()) -> dict[str, Any]:
    """The knobs a config sets away from their defaults (what its known-good entry pins)."""
    return {k: getattr(config, k) for k in KNOBS if k not in leave and k in kg.at_default(config)}


def _from_ladder(workspace: Path, name: str) -> dict[str, Any]:
    path = inside(workspace, name, "from_ladder")
    try:
        ladder = read_ladder(path)
    except RedlineError as exc:
        raise InputError(f"from_ladder: {exc}") from exc
    if ladder.ceiling is None:
        raise InputError(f"from_ladder: {name} has no recorded ceiling yet; finish its climb (ceiling_record) first")
    c = ladder.ceiling
    fixed = ladder.fixed.model_dump()
    knobs = {k: v for k, v in fixed.items() if k in KNOBS and v != ServeConfig.model_fields[k].default}
    knobs |= {
        "max_model_len": c.max_model_len,
        "max_num_batched_tokens": c.max_num_batched_tokens,
        "gpu_memory_utilization": fixed["gpu_memory_utilization"],
    }  # the ceiling holds at this utilization
    rungs = ", ".join(map(str, c.proven_by))
    version = ladder.engine_version or ladder.rungs[c.proven_by[-1] - 1].signals.engine_version or ""
    return {
        "model": ladder.model.path,
        "hardware": ladder.gpu.name if ladder.gpu and ladder.gpu.name else NO_GPU,
        "engine": ladder.engine,
        "engine_version": version,
        "flags": list(fixed["extra_flags"]),
        "env": dict(fixed["env"]),
        "knobs": knobs,
        "why": (
            f"the smoke-tested ceiling of {relative(workspace, path)}: max_model_len {c.max_model_len:,}, "
            f"max_num_batched_tokens {c.max_num_batched_tokens:,} (rungs {rungs})"
        ),
        "evidence": [
            Evidence(kind="ladder_ceiling", ref=relative(workspace, path), item=f"rungs {rungs}", note=c.reason)
        ],
    }


def _from_result(found: Resolved, kind: str, item: str) -> dict[str, Any]:
    ctx = found.points[0].context
    serve = found.serve
    concurrencies = [p.context.workload.concurrency for p in found.points]
    return {
        "model": serve.model,
        "hardware": ctx.hardware.gpu_name or NO_GPU,
        "engine": ctx.engine.name,
        "engine_version": ctx.engine.version or "",
        "flags": list(serve.extra_flags),
        "env": dict(serve.env),
        "knobs": config_knobs(serve),
        "why": f"the config of {found.source.describe()}, measured at c={', '.join(map(str, concurrencies))}",
        "evidence": [Evidence.model_validate({"kind": kind, "ref": found.source.ref, "item": item})],
    }


def _given(r: KnownGoodRecordRequest) -> dict[str, Any]:
    """What the request states itself; it wins over what a source gives."""
    given: dict[str, Any] = {
        k: v
        for k, v in (("model", r.model), ("hardware", r.hardware), ("engine_version", r.engine_version), ("why", r.why))
        if v
    }
    return given | ({"evidence": list(r.evidence)} if r.evidence else {})


def entry_of(workspace: Path, r: KnownGoodRecordRequest) -> KnownGoodEntry:
    """The entry a record request makes: from a ladder's ceiling, a campaign cell, an A/B arm, or given whole."""
    sources = [s for s in (r.from_ladder, r.from_campaign, r.from_ab) if s]
    if len(sources) > 1:
        raise InputError("name one source: from_ladder, from_campaign (with cell) or from_ab (with arm)")
    base: dict[str, Any] = {"engine": r.engine}
    if r.from_ladder:
        base = _from_ladder(workspace, r.from_ladder)
    elif r.from_campaign:
        base = _from_result(from_cell(workspace, r.from_campaign, r.cell), "campaign_cell", r.cell)
    elif r.from_ab:
        base = _from_result(from_ab(workspace, r.from_ab, r.arm), "ab_arm", r.arm)
    fields = base | _given(r)
    fields["flags"] = list(dict.fromkeys([*base.get("flags", []), *r.flags]))
    fields["env"] = {**base.get("env", {}), **r.env}
    fields["knobs"] = {**base.get("knobs", {}), **r.knobs}
    missing = [k for k in ("model", "hardware", "engine_version", "why", "evidence") if not fields.get(k)]
    if missing:
        raise InputError(
            f"a known-good entry needs {', '.join(missing)}: give them, or name a source (from_ladder, "
            "from_campaign with cell, from_ab with arm) that says them"
        )
    fields["model_config_hash"] = local_model_files(fields["model"]).config_hash
    try:
        return KnownGoodEntry(**fields, recorded_at=datetime.now(UTC))
    except ValidationError as exc:
        raise InputError(f"not a known-good entry: {explain(exc)}") from exc


def known_good_record(workspace: Path, request: KnownGoodRecordRequest) -> KnownGoodRecorded:
    """Add the entry, or update the one of the same key in place (model, hardware, engine version)."""
    entry = entry_of(workspace, request)

    def change(current: KnownGoodFile) -> tuple[KnownGoodFile, bool]:
        entries = list(current.entries)
        at = next((i for i, e in enumerate(entries) if kg.same_key(e, entry)), None)
        if at is None:
            entries.append(entry)
        else:
            entries[at] = entry
        return current.model_copy(update={"entries": entries}), at is not None

    replaced = update_registry(registry_path(workspace), KnownGoodFile, WHAT, HEADER, change)
    return KnownGoodRecorded(path=REGISTRY, replaced=replaced, entry=entry)


def known_good_lookup(workspace: Path, request: KnownGoodLookupRequest) -> KnownGoodFound:
    r = request
    entry = kg.lookup(
        read_entries(registry_path(workspace)),
        model=r.model,
        config_hash=r.model_config_hash or None,
        hardware=r.hardware,
        engine=r.engine,
        engine_version=r.engine_version,
    )
    where = f"{r.model} on {r.hardware}, {r.engine} {r.engine_version}"
    if entry is None:
        return KnownGoodFound(found=False, note=f"no known-good entry for {where} in {REGISTRY}")
    return KnownGoodFound(found=True, entry=entry, note=f"{where} needs: {_needs(entry)} ({entry.why})")


def _needs(entry: KnownGoodEntry) -> str:
    parts = [*entry.flags, *(f"{k}={v}" for k, v in entry.env.items()), *(f"{k}: {v}" for k, v in entry.knobs.items())]
    return ", ".join(parts) or "nothing beyond its defaults"


def known_good_list(workspace: Path, request: KnownGoodListRequest | None = None) -> KnownGoodList:
    entries = read_entries(registry_path(workspace))
    if request is not None and request.model:
        entries = [e for e in entries if e.model == request.model]
    return KnownGoodList(path=REGISTRY, entries=entries)


__all__ = ["config_knobs", "entry_of", "known_good_list", "known_good_lookup", "known_good_record"]
