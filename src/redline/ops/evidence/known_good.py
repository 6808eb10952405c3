"""known_good_record, known_good_lookup, known_good_list: the known-good registry (known-good.yml) as operations.

    known_good_record(workspace, KnownGoodRecordRequest(from_ladder="ladders/l8b.yml"))   # a ceiling, in one call
    known_good_record(workspace, KnownGoodRecordRequest(from_ab="fp8kv", arm="fp8", why="..."))  # a champion
    known_good_lookup(workspace, KnownGoodLookupRequest(model=..., hardware="NVIDIA H200", engine_version="0.26.0"))

An entry is keyed by model, hardware and engine version; recording a key that is there updates
that entry in place (comments kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from redline.errors import InputError, RedlineError
from redline.ledger import read_ladder
from redline.ledger.ab_file import AbPaths, read_spec
from redline.models.campaign import LEVERS
from redline.models.known_good import (
    KNOBS,
    NO_GPU,
    Evidence,
    KnownGoodAnswer,
    KnownGoodEntry,
    KnownGoodFile,
    KnownGoodFound,
    KnownGoodList,
    KnownGoodRecorded,
)
from redline.models.serve import ServeConfig
from redline.ops.campaign_read import load_named
from redline.ops.evidence.context import local_model_files
from redline.ops.evidence.known_good_apply import REGISTRY_FILE, admit_entry, read_entries, registry_path
from redline.ops.evidence.sources import Resolved, from_ab, from_cell
from redline.ops.request_base import Request
from redline.ops.requests_evidence import (
    KNOWN_GOOD_VERBS,
    KnownGoodConfigRequest,
    KnownGoodListRequest,
    KnownGoodLookupRequest,
    KnownGoodRecordRequest,
)
from redline.ops.workspace import inside, relative
from redline.policy import known_good as kg
from redline.validation_text import explain as explain_fields
from redline.validation_text import explain_line


def _from_ladder(workspace: Path, name: str) -> dict[str, Any]:
    path = inside(workspace, name, "from_ladder", example="ladders/l8b.yml")
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


def _cell_spec(workspace: Path, campaign: str, cell: str, what: str) -> ServeConfig:
    """A campaign cell's serve config as its file writes it: the base and the cell's levers, before any gate."""
    loaded = load_named(workspace, campaign, what)
    spec = next((c for c in loaded.cells if c.name == cell), None)
    if spec is None:
        raise InputError(f"{what}: {campaign} has no cell {cell!r}; its cells are {', '.join(loaded.names)}")
    levers = {k: v for k, v in spec.set().items() if k in LEVERS}
    return ServeConfig.model_validate({**loaded.base.model_dump(), **levers})


def _arm_spec(workspace: Path, ab: str, arm: str) -> ServeConfig:
    """An A/B arm's serve config as its spec writes it (inline, or its campaign cell's), before any gate."""
    spec = read_spec(AbPaths(workspace, ab))
    found = next((a for a in spec.arms if a.name == arm), None) if spec is not None else None
    if found is None:  # from_ab found it in the same file a moment ago
        raise InputError(f"from_ab: A/B {ab!r} has no arm {arm!r}")
    if found.serve is not None:
        return found.serve
    return _cell_spec(workspace, str(found.campaign), str(found.cell), f"arm {arm}: campaign")


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


@dataclass(frozen=True)
class _Source:
    """What a record request's source gives: the entry's fields, and the config it ran (with its own file's)."""

    fields: dict[str, Any]
    run: ServeConfig | None = None  # a campaign cell's or an A/B arm's config as it booted
    spec: ServeConfig | None = None  # the same as its file writes it, before the gates


def _source(workspace: Path, r: KnownGoodRecordRequest) -> _Source:
    sources = [s for s in (r.from_ladder, r.from_campaign, r.from_ab) if s]
    if len(sources) > 1:
        raise InputError("name one source: from_ladder, from_campaign (with cell) or from_ab (with arm)")
    if r.keep_knobs and not (r.from_campaign or r.from_ab):
        raise InputError("keep_knobs: name from_campaign (with cell) or from_ab (with arm), whose knobs it keeps")
    if r.from_ladder:
        return _Source(_from_ladder(workspace, r.from_ladder))
    if r.from_campaign:
        found = from_cell(workspace, r.from_campaign, r.cell)
        spec = _cell_spec(workspace, r.from_campaign, r.cell, "from_campaign")
        return _Source(_from_result(found, "campaign_cell", r.cell), found.serve, spec)
    if r.from_ab:
        found = from_ab(workspace, r.from_ab, r.arm)
        return _Source(_from_result(found, "ab_arm", r.arm), found.serve, _arm_spec(workspace, r.from_ab, r.arm))
    return _Source({"engine": r.engine})


def _run_knobs(
    workspace: Path, source: _Source, fields: dict[str, Any], keep: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """The knobs of a campaign cell or an A/B arm the entry keeps (those the user marks in keep_knobs, else those
    its own file set and the entry of its key had added), and those left out."""
    run, spec = source.run, source.spec
    assert run is not None and spec is not None
    booted = [k for k in KNOBS if k in kg.at_default(run)]
    if keep:
        wrong = [k for k in keep if k not in booted]
        if wrong:
            raise InputError(
                f"keep_knobs: {', '.join(wrong)} is not a knob that config sets; it sets {', '.join(booted) or 'none'}"
            )
        return {k: getattr(run, k) for k in keep}, [f"{k} {getattr(run, k)!r}" for k in booted if k not in keep]
    existing = kg.lookup(
        read_entries(registry_path(workspace)),
        model=fields["model"],
        config_hash=local_model_files(fields["model"]).config_hash,
        hardware=fields.get("hardware", ""),
        engine=fields.get("engine", ""),
        engine_version=fields.get("engine_version", ""),
    )
    return kg.run_knobs(run, spec, existing)


def entry_of(workspace: Path, r: KnownGoodRecordRequest) -> tuple[KnownGoodEntry, list[str]]:
    """The entry a record request makes (from a ladder's ceiling, a campaign cell, an A/B arm, or given whole), and
    the knobs of its source it leaves out (a gate's pin, a bench setting)."""
    source = _source(workspace, r)
    base = source.fields
    fields = base | _given(r)
    left: list[str] = []
    knobs = base.get("knobs", {})
    if source.run is not None:
        knobs, left = _run_knobs(workspace, source, fields, r.keep_knobs)
    fields["flags"] = list(dict.fromkeys([*base.get("flags", []), *r.flags]))
    fields["env"] = {**base.get("env", {}), **r.env}
    fields["knobs"] = {**knobs, **r.knobs}
    left = [x for x in left if x.split(" ", 1)[0] not in r.knobs]
    missing = [k for k in ("model", "hardware", "engine_version", "why", "evidence") if not fields.get(k)]
    if missing:
        raise InputError(
            f"a known-good entry needs {', '.join(missing)}: give them, or name a source (from_ladder, "
            "from_campaign with cell, from_ab with arm) that says them"
        )
    fields["model_config_hash"] = local_model_files(fields["model"]).config_hash
    try:
        entry = KnownGoodEntry(**fields, recorded_at=datetime.now(UTC))
    except ValidationError as exc:
        raise InputError(f"not a known-good entry: {explain_line(exc)}") from exc
    admit_entry(entry, "")  # the allowlist at record time, as at every read
    return entry, left


def _recorded_note(entry: KnownGoodEntry, replaced: bool, left: list[str]) -> str:
    text = f"{'updated' if replaced else 'recorded'} {entry.key().describe()}: {_needs(entry)}"
    if left:
        text += (
            f"; left out {', '.join(left)}: the run's, not the model's (a gate's pin or a bench setting); "
            "name one in keep_knobs to keep it"
        )
    return text


def known_good_record(workspace: Path, request: KnownGoodRecordRequest) -> KnownGoodRecorded:
    """Add the entry, or update the one of the same key in place (model, hardware, engine release); a registry
    holding an entry the allowlist refuses is refused first, naming it."""
    read_entries(registry_path(workspace))
    entry, left = entry_of(workspace, request)

    def change(current: KnownGoodFile) -> tuple[KnownGoodFile, bool]:
        entries = list(current.entries)
        at = next((i for i, e in enumerate(entries) if kg.same_key(e, entry)), None)
        if at is None:
            entries.append(entry)
        else:
            entries[at] = entry
        return current.model_copy(update={"entries": entries}), at is not None

    replaced = REGISTRY_FILE.update(registry_path(workspace), change)
    note = _recorded_note(entry, replaced, left)
    return KnownGoodRecorded(path=REGISTRY_FILE.name, replaced=replaced, entry=entry, left_out=left, note=note)


def known_good_lookup(workspace: Path, request: KnownGoodLookupRequest) -> KnownGoodFound:
    r = request
    run = kg.Run(r.model, r.model_config_hash or None, r.hardware, r.engine, r.engine_version)
    found = kg.find(read_entries(registry_path(workspace)), run)
    entry = found.entry
    if entry is None:
        why = f": {found.note}" if found.note else ""
        return KnownGoodFound(
            found=False, note=f"no known-good entry for {run.describe()} in {REGISTRY_FILE.name}{why}"
        )
    matched = f"; {found.note}" if found.note else ""
    return KnownGoodFound(
        found=True, entry=entry, note=f"{run.describe()} needs: {_needs(entry)} ({entry.why}){matched}"
    )


def _needs(entry: KnownGoodEntry) -> str:
    parts = [*entry.flags, *(f"{k}={v}" for k, v in entry.env.items()), *(f"{k}: {v}" for k, v in entry.knobs.items())]
    return ", ".join(parts) or "nothing beyond its defaults"


def known_good_list(workspace: Path, request: KnownGoodListRequest | None = None) -> KnownGoodList:
    entries = read_entries(registry_path(workspace))
    if request is not None and request.model:
        entries = [e for e in entries if e.model == request.model]
    return KnownGoodList(path=REGISTRY_FILE.name, entries=entries)


def verb_request(request: KnownGoodConfigRequest) -> Request:
    """known_good_config's request as its verb's own: the fields given (away from their default), refused by name
    when the verb takes no such field, checked by the verb's request."""
    verb = KNOWN_GOOD_VERBS[request.verb]
    fields = KnownGoodConfigRequest.model_fields
    given = {k: getattr(request, k) for k in fields if k != "verb" and getattr(request, k) != fields[k].default}
    wrong = sorted(set(given) - set(verb.model_fields))
    if wrong:
        raise InputError(
            f"known_good_config verb {request.verb} takes no {', '.join(wrong)}: its fields are "
            f"{', '.join(verb.model_fields) or 'none'}"
        )
    try:
        return verb.model_validate(given)
    except ValidationError as exc:
        lines = explain_fields(exc, verb).splitlines()
        raise InputError(f"known_good_config verb {request.verb}: {'; '.join(lines)}") from exc


def known_good_config(workspace: Path, request: KnownGoodConfigRequest) -> KnownGoodAnswer:
    """The registry in one call: record, lookup or list by the verb, answered by that verb's own operation."""
    r = verb_request(request)
    if isinstance(r, KnownGoodRecordRequest):
        return KnownGoodAnswer(known_good_record(workspace, r))
    if isinstance(r, KnownGoodLookupRequest):
        return KnownGoodAnswer(known_good_lookup(workspace, r))
    assert isinstance(r, KnownGoodListRequest)
    return KnownGoodAnswer(known_good_list(workspace, r))


__all__ = [
    "entry_of",
    "known_good_config",
    "known_good_list",
    "known_good_lookup",
    "known_good_record",
    "verb_request",
]
