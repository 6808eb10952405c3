"""An A/B already run, read from its files: its spec, every arm's figures over its trial records, the verdict; the
one reader of an A/B's trials for its own result and for the evidence (a baseline naming an arm), so ops/evidence
imports nothing of ops/ab.

    spec, arms, verdict = ab_arms(workspace, "l8b-mnbt")      # no target needed: every figure is on disk
    records = trial_records(AbPaths(workspace, spec.name), spec)
"""

from __future__ import annotations

from pathlib import Path

from redline.errors import InputError
from redline.ledger.ab_file import AbPaths, read_spec, read_trial
from redline.models.ab import AbSpec, ArmPlan, ArmSummary, TrialRecord
from redline.models.verdict import AbVerdict
from redline.ops.traces import with_traces
from redline.policy import ab as plans


def trial_records(paths: AbPaths, spec: AbSpec) -> dict[str, list[TrialRecord]]:
    """Every trial record of every arm, trial 1 to spec.trials."""
    out: dict[str, list[TrialRecord]] = {}
    for arm in spec.arms:
        out[arm.name] = [r for k in range(1, spec.trials + 1) if (r := read_trial(paths, arm.name, k)) is not None]
    return out


def ab_arms(workspace: Path, name: str) -> tuple[AbSpec, list[ArmSummary], AbVerdict]:
    """An A/B already run, each arm summarized from its trial records (its accuracy gate not read: ops/ab/result.py
    ab_summary adds it), and the verdict."""
    paths = AbPaths(workspace, name)
    spec = read_spec(paths)
    if spec is None:
        named = name.split("/")[-1].removesuffix(".yml").removesuffix(".yaml")  # its file named, not the A/B
        if named != name and AbPaths(workspace, named).spec_file.is_file():
            raise InputError(f"A/B {name!r} is its file's name; write the A/B's name, {named!r}")
        raise InputError(
            f"no A/B named {name!r} in this workspace ({paths.relative(paths.spec_file)} is missing); "
            "run it with ab_run first"
        )
    spec = with_traces(spec, paths.spec_file, workspace)
    records = trial_records(paths, spec)
    arms = []
    for arm in spec.arms:
        done = records.get(arm.name, [])
        if not done:
            raise InputError(f"A/B {name!r}: arm {arm.name!r} has no trial yet; run the A/B first")
        engine = done[0].engine or arm.engine or spec.engine  # as recorded; an older record: the A/B's
        baseline = arm.name == spec.baseline
        arms.append(ArmPlan(name=arm.name, baseline=baseline, engine=engine, serve=done[0].serve, boot_command=[]))
    summaries, verdict = plans.summarize_ab(spec, arms, records)
    return spec, summaries, verdict


__all__ = ["ab_arms", "trial_records"]
