"""`redline known-good record|lookup|list`: the serve flags a model needs on a hardware and engine version
(known-good.yml in --workspace). The flags are the known_good_* tools' parameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from redline.cli.common import Subparsers, command_actions, workspace_operation
from redline.models.known_good import KnownGoodEntry, KnownGoodFound, KnownGoodList, KnownGoodRecorded
from redline.ops.evidence import known_good as ops
from redline.ops.request_base import Request
from redline.ops.requests_evidence import KnownGoodListRequest, KnownGoodLookupRequest, KnownGoodRecordRequest


def entry_text(e: KnownGoodEntry) -> str:
    needs = [*e.flags, *(f"{k}={v}" for k, v in e.env.items()), *(f"{k}: {v}" for k, v in e.knobs.items())]
    evidence = "; ".join(f"{x.kind} {x.ref}" + (f" ({x.item})" if x.item else "") for x in e.evidence)
    return (
        f"{e.key().describe()}\n  needs    {', '.join(needs) or 'nothing beyond its defaults'}\n"
        f"  why      {e.why}\n  evidence {evidence}"
    )


def _record(r: KnownGoodRecorded) -> str:
    return f"{'updated' if r.replaced else 'recorded'} in {r.path}: {entry_text(r.entry)}"


def _lookup(r: KnownGoodFound) -> str:
    return entry_text(r.entry) if r.entry is not None else r.note


def _list(r: KnownGoodList) -> str:
    return "\n".join(entry_text(e) for e in r.entries) or f"no entries in {r.path}"


ACTIONS: list[tuple[str, type[Request], str, Callable[..., BaseModel], Callable[[Any], str]]] = [
    (
        "record",
        KnownGoodRecordRequest,
        "record (or update) an entry: given, or --from-ladder / --from-campaign / --from-ab",
        ops.known_good_record,
        _record,
    ),
    (
        "lookup",
        KnownGoodLookupRequest,
        "the entry for a model, hardware and engine version",
        ops.known_good_lookup,
        _lookup,
    ),
    ("list", KnownGoodListRequest, "every entry (or one model's)", ops.known_good_list, _list),
]


def register(subparsers: Subparsers) -> None:
    actions = command_actions(
        subparsers, "known-good", "the known-good registry: flags a model needs to boot or survive load"
    )
    for name, request, text, operation, render in ACTIONS:
        workspace_operation(actions.add_parser(name, help=text), request, operation, render, _not_found)


def _not_found(result: BaseModel) -> int:
    return 0 if not isinstance(result, KnownGoodFound) or result.found else 1


__all__ = ["entry_text", "register"]
