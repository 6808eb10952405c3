"""A closed champion written back into its deploy: its flags merged into the engine's argument list of a Helm values
file (round-trip: comments, key order and indentation kept), a dry run's diff first, then the write of exactly that
diff (its diff_id, with the acknowledgement), and the champion recorded as the new baseline.

    answer = champion_apply(workspace, ChampionApplyRequest(ab="mnbt", values="deploy/values.yaml",
                                                             baseline="llama8b-prod", dry_run=True))
    champion_apply(workspace, request.model_copy(update={"dry_run": False, "expect": answer.diff_id,
                                                         "i_understand_this_writes_the_deploy": True}))

Refused, before anything is read from the values file: an A/B with no champion, a champion that is not closed (each
missing step named with its call), a champion that turns on a lever risking the model's answers (policy/quality_risk)
without its accuracy gate's pass against the baseline arm (policy/accuracy.py: a consistency check, not a benchmark
score; ab_run runs it). The flags are the champion's own config (Engine.deploy_flags): never where the
server listens, the model or how it loads, which the deploy sets.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.errors import InputError
from redline.inputs import read_text
from redline.ledger import yamlfile
from redline.ledger.ab_file import TRIAL, AbPaths, read_trial
from redline.ledger.atomic import atomic_write
from redline.models.ab import AbSpec, ArmSummary
from redline.models.deploy import ChampionApplied
from redline.ops.ab.result import ab_close, accuracy_missing
from redline.ops.evidence.baseline import perf_baseline_record
from redline.ops.requests_evidence import ChampionApplyRequest, PerfBaselineRecordRequest
from redline.ops.workspace import inside, own_record, relative
from redline.policy.deploy_args import Edit, apply_edits, edit_line, merge_args
from redline.untrusted import MAX_YAML_BYTES

ACK = "i_understand_this_writes_the_deploy"


def champion_apply(workspace: Path, request: ChampionApplyRequest) -> ChampionApplied:
    r = request
    path = inside(workspace, r.values, "values", example="deploy/values.yaml")
    _not_a_record(workspace, path, r.values)
    spec, champion = _closed_champion(workspace, r.ab)
    _admitted(workspace, spec, champion)
    engine = get_engine(champion.engine)
    if not r.dry_run and r.i_understand_this_writes_the_deploy is not True:
        raise InputError(f"champion_apply writes {r.values}: pass dry_run=true to read the diff, then {ACK}=true")
    flags, left = engine.deploy_flags(champion.serve)
    name, key = relative(workspace, path), r.args_key or engine.values_args_key
    edits, diff, diff_id = _write_back(workspace, path, r, key, flags, engine)
    recorded = None
    if not r.dry_run:
        note = f"A/B {r.ab}'s closed champion {champion.arm}, written into {name} ({key})"
        recorded = perf_baseline_record(
            workspace, PerfBaselineRecordRequest(name=r.baseline, ab=r.ab, arm=champion.arm, note=note, replace=True)
        )
    return ChampionApplied(
        ab=r.ab,
        champion=champion.arm,
        values=name,
        args_key=key,
        flags=flags,
        left_out=[f"{item} (the deploy's own: where it listens, the model and how it loads)" for item in left],
        changes=[edit_line(e) for e in edits],
        diff=diff,
        diff_id=diff_id,
        written=not r.dry_run and bool(edits),
        baseline=recorded,
        next=(
            f"read the diff, then call again with dry_run=false, expect={diff_id!r} and {ACK}=true"
            if r.dry_run
            else f"deploy it; {r.baseline!r} in baselines.yml is the champion now, to diff later runs against"
        ),
    )


def _closed_champion(workspace: Path, ab: str) -> tuple[AbSpec, ArmSummary]:
    """The A/B's champion, refused unless its accuracy gate passed where it turns on a lever that risks the model's
    answers, and it is closed."""
    spec, arms, champion, close = ab_close(workspace, ab)
    if champion is None or close is None:
        raise InputError(f"A/B {ab!r} has no champion (its verdict crowned no arm): there is nothing to write back")
    gate = accuracy_missing(arms, champion)
    if gate is not None:
        raise InputError(
            f"the champion {champion.arm!r} of A/B {ab!r} can change the model's answers: it is written back only "
            f"with {gate}; or apply it by hand after your own evaluation"
        )
    if not close.closed:
        raise InputError(f"the champion {champion.arm!r} of A/B {ab!r} is not closed: {'; '.join(close.missing)}")
    return spec, champion


def _admitted(workspace: Path, spec: AbSpec, champion: ArmSummary) -> None:
    """Each of the champion's trial records (workspace files) passes its engine's allowlist as a serve config does at
    init, before a dry run shows a diff: a flag edited into one after the A/B closed is refused, naming the file."""
    paths, engine = AbPaths(workspace, spec.name), get_engine(champion.engine)
    for k in range(1, spec.trials + 1):
        record = read_trial(paths, champion.arm, k)
        if record is not None:
            file = paths.relative(paths.trial_dir(champion.arm, k) / TRIAL)
            engine.admit_written(
                record.serve,
                f"the champion {champion.arm!r} of A/B {spec.name!r} ({file})",
                "a trial record says what the A/B booted, and one edited since is not written back: run the A/B again",
            )


def _write_back(
    workspace: Path, path: Path, r: ChampionApplyRequest, key: str, flags: list[str], engine: Engine
) -> tuple[list[Edit], str, str]:
    """The edits, the diff and its id; the values file written (under its lock) when asked and `expect` is that id."""
    name = relative(workspace, path)
    what = f"{name} (the deploy's values file)"  # relative to the workspace, never the server's own path
    with yamlfile.locked(path):
        before = read_text(path, what, max_bytes=MAX_YAML_BYTES)
        doc, dump = yamlfile.parse_as_written(before, what, InputError)
        _not_a_record(workspace, path, r.values, doc)
        parent, last = _list_of(doc, key, r.values)
        edits = merge_args(list(parent.get(last) or []), flags, engine.deploy_option)
        if edits:
            if parent.get(last) is None:
                parent[last] = yamlfile.to_yaml([])  # a missing list is made
            apply_edits(parent[last], edits)  # in place, so the list's other items keep their comments
        after = dump(doc) if edits else before
        diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), name, name))
        diff_id = hashlib.sha256(f"{before}\0{after}".encode()).hexdigest()[:16]
        if r.dry_run or not edits:
            return edits, diff, diff_id
        if r.expect != diff_id:
            raise InputError(  # never the id itself: the write follows a dry run whose diff was read
                "expect must be the diff_id of the dry run whose diff you read: "
                + (
                    "the values file or the champion changed since, run the dry run again"
                    if r.expect
                    else "run champion_apply with dry_run=true first"
                )
            )
        atomic_write(path, after)
    return edits, diff, diff_id


def _not_a_record(workspace: Path, path: Path, values: str, doc: object = None) -> None:
    """Refuse a values path that is one of redline's own records (by where it is, or what it holds once read): a
    write there would make the record say what no run did (docs/security.md, 38.5)."""
    what = own_record(workspace, path, doc)
    if what is not None:
        raise InputError(
            f"values: {values!r} is {what}, one of redline's own records, not a deploy's values file: champion_apply "
            "writes only the Helm values file a deploy reads; name that file (such as deploy/values.yaml)"
        )


def _list_of(doc: Any, key: str, values: str) -> tuple[Any, str]:
    """The mapping that holds the engine's argument list `key` names, and the list's own key: its parents must be
    mappings, and the list (where it is there) a list of strings."""
    if not isinstance(doc, dict):
        raise InputError(f"values: {values} must be a YAML mapping (a Helm values file)")
    *parents, last = key.split(".")
    node: Any = doc
    for depth, part in enumerate(parents):
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            where = ".".join(parents[: depth + 1])
            raise InputError(f"args_key: {values} has no mapping at {where}; write the key its engine arguments are at")
    items = node.get(last)
    if items is not None and (not isinstance(items, list) or not all(isinstance(i, str) for i in items)):
        raise InputError(f"args_key: {key} in {values} must be a list of strings (the engine's arguments)")
    return node, last


__all__ = ["champion_apply"]
