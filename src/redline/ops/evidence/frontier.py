"""The lever frontier (frontier.yml in the workspace, comments kept) as operations: ab_run records what each arm tried
and the next levers; lever_frontier reads it; champion_select leaves out what an A/B already judged.

    frontier = record_ab(workspace, spec, arms, verdict, levers)   # after an A/B's verdict (ops/ab/result.py)
    answer = lever_frontier(workspace, LeverFrontierRequest(model=...))
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from redline.ledger.edited_yaml import EditedFile
from redline.models.ab import AbSpec, ArmSummary
from redline.models.context import ContextDescriptor
from redline.models.frontier import Frontier, FrontierFile, FrontierList, TriedLever, TriedUnder
from redline.models.lever import Lever
from redline.models.verdict import AbVerdict
from redline.ops.requests_evidence import LeverFrontierRequest
from redline.policy.frontier import levers_tried, said_next, under_of, updated
from redline.policy.known_good import hardware_key

FRONTIER_FILE = EditedFile(
    "frontier.yml",
    FrontierFile,
    "lever frontier",
    "redline's lever frontier: per model, hardware and engine version, the levers an A/B tried (the run, its\n"
    "outcome, why a refuted one lost) and those not tried yet, best expected gain per cost first. ab_run keeps it;\n"
    "comments you add here are kept.",
)


def frontier_path(workspace: Path) -> Path:
    return workspace / FRONTIER_FILE.name


def _key(context: ContextDescriptor) -> tuple[str, str, str, str | None]:
    return (context.model.name, hardware_key(context.hardware.gpu_name), context.engine.name, context.engine.version)


def _of(frontiers: Sequence[Frontier], key: tuple[str, str, str, str | None]) -> Frontier | None:
    return next((f for f in frontiers if (f.model, f.hardware, f.engine, f.engine_version) == key), None)


def frontier_for(workspace: Path, context: ContextDescriptor) -> Frontier | None:
    """The frontier of a run's model, hardware and engine version, if one is kept."""
    return _of(FRONTIER_FILE.read(frontier_path(workspace)).frontiers, _key(context))


def baseline_arm(arms: Sequence[ArmSummary], verdict: AbVerdict) -> ArmSummary | None:
    """The arm the A/B set the others against, where it measured anything (its context keys the frontier)."""
    return next((a for a in arms if a.arm == verdict.compared_with and a.points), None)


def ab_under(spec: AbSpec, arms: Sequence[ArmSummary], verdict: AbVerdict) -> TriedUnder | None:
    """Where an A/B measured (its baseline's regime, its top concurrency, its longest workload): where its verdicts
    on the levers it tried hold; None when its baseline measured nothing."""
    base = baseline_arm(arms, verdict)
    graphs = base.points[0].context.regime.graphs if base is not None else None
    return None if graphs is None else under_of(graphs, spec.concurrencies or [1], spec.longest)


def record_ab(
    workspace: Path, spec: AbSpec, arms: Sequence[ArmSummary], verdict: AbVerdict, levers: Sequence[Lever]
) -> Frontier | None:
    """Each arm's levers against the baseline, with the A/B's outcome for it (draft unless a VERDICT), and the next
    levers, into the frontier of the baseline's model, hardware and engine version; None when the baseline has no
    figures (nothing ran) to key it by."""
    base = baseline_arm(arms, verdict)
    if base is None:
        return None
    key, now = _key(base.points[0].context), datetime.now(UTC)
    under = ab_under(spec, arms, verdict)
    outcomes = {o.arm: o for o in verdict.arms}
    tried = []
    for arm in arms:
        outcome = outcomes.get(arm.arm)
        if arm is base or outcome is None or not arm.points or _key(arm.points[0].context)[1:] != key[1:]:
            continue  # the baseline itself, an arm that never ran, or one on other hardware or another engine
        # (an arm of another checkpoint stays: fp8 weights against bf16 is a lever of the baseline's model)
        said = outcome.outcome if verdict.rigor == "VERDICT" and outcome.outcome != "baseline" else "draft"
        run = f"ab/{spec.name}.yml, arm {arm.arm}"
        for lever, what in levers_tried(base.serve, arm.serve):
            tried.append(
                TriedLever(lever=lever, change=what, run=run, outcome=said, why=outcome.why, under=under, at=now)
            )

    def merge(current: FrontierFile) -> tuple[FrontierFile, Frontier]:
        old = _of(current.frontiers, key) or Frontier(
            model=key[0], hardware=key[1], engine=key[2], engine_version=key[3], updated_at=now
        )
        new = updated(old, tried, levers, now, under)
        others = [f for f in current.frontiers if f is not old]
        return current.model_copy(update={"frontiers": [*others, new]}), new

    return FRONTIER_FILE.update(frontier_path(workspace), merge)


def lever_frontier(workspace: Path, request: LeverFrontierRequest) -> FrontierList:
    frontiers = FRONTIER_FILE.read(frontier_path(workspace)).frontiers
    chosen = [f for f in frontiers if not request.model or f.model == request.model]
    return FrontierList(path=FRONTIER_FILE.name, frontiers=chosen, next=[said_next(f) for f in chosen])


__all__ = ["FRONTIER_FILE", "ab_under", "baseline_arm", "frontier_for", "frontier_path", "lever_frontier", "record_ab"]
