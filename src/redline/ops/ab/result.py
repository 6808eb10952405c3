"""What an A/B did, read from its trial records on disk: every arm's figures, the verdict, the next levers.

ab_result(workspace, spec, plan, ran=[...])       # after a run: the result the tool answers
spec, arms, verdict = ab_summary(workspace, name)   # any time after: from the trial files alone
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from redline.engines import get_engine
from redline.errors import RedlineError
from redline.inputs import read_text
from redline.ledger.ab_file import AbPaths
from redline.models.ab import AbPlan, AbResult, AbSpec, ArmPoint, ArmSummary, TrialRecord
from redline.models.accuracy import LABEL as ACCURACY_LABEL
from redline.models.lever import CloseStatus, Lever
from redline.models.load import load_of
from redline.models.sol import SolFigure
from redline.models.verdict import AbVerdict
from redline.ops.ab.accuracy import accuracy_gates
from redline.ops.ab.plan import done_trials
from redline.ops.ab_read import ab_arms, trial_records
from redline.ops.campaign_read import ladder_ceiling, load_named
from redline.ops.evidence.frontier import ab_under, baseline_arm, frontier_for, record_ab
from redline.ops.evidence.known_good_apply import recorded_for, registry_path
from redline.ops.request_base import MAX_TEXT
from redline.policy import ab as plans
from redline.policy.ab_guards import guard_arms, guards_said
from redline.policy.accuracy import gate_missing, said_of
from redline.policy.close import close_status
from redline.policy.frontier import open_levers, said_next
from redline.policy.known_good import hardware_key
from redline.policy.levers import LeverInput, next_levers
from redline.policy.quality_risk import quality_risks
from redline.policy.unusable import Unusable, unusable

# ---- the result -----------------------------------------------------------------------------------------------------


def _arm_sol(arm: ArmSummary | None) -> SolFigure | None:
    top = arm.points[-1] if arm and arm.points else None
    return top.sol if top is not None else None


def _kv_tokens(paths: AbPaths, spec: AbSpec, arm: ArmSummary) -> int | None:
    """The KV tokens the arm's first trial with a boot log reported (the log read by the arm's engine)."""
    engine = get_engine(arm.engine)
    for k in range(1, spec.trials + 1):
        log = paths.trial_dir(arm.arm, k) / "boot.log"
        try:
            tokens = engine.parse_boot_log(read_text(log, "a trial's boot log", max_bytes=MAX_TEXT)).kv_cache_tokens
        except RedlineError:  # no log (a trial that never booted), or one that cannot be read: the next trial's
            continue
        if tokens:
            return tokens
    return None


def _arm_ceiling(workspace: Path, spec: AbSpec, name: str) -> int | None:
    """The ladder's ceiling where the arm is a campaign's cell over a ladder (base.from_ladder); None inline."""
    arm = next((a for a in spec.arms if a.name == name), None)
    if arm is None or arm.campaign is None:
        return None
    try:
        return ladder_ceiling(load_named(workspace, str(arm.campaign), f"arm {name}: campaign"))
    except RedlineError:  # the campaign the arm was planned from is gone since: no ceiling to keep under
        return None


def levers_for(workspace: Path, spec: AbSpec, arms: Sequence[ArmSummary], verdict: AbVerdict) -> list[Lever]:
    """The next levers from the champion (or, with none, the baseline's) config and its % of SoL, grounded in the
    host it ran on, the KV tokens its boot reported, the workload's lengths and its ladder's ceiling."""
    chosen = verdict.champion or verdict.compared_with
    arm = next((a for a in arms if a.arm == chosen), None)
    if arm is None:
        return []
    context = arm.points[0].context if arm.points else None
    return next_levers(
        LeverInput(
            claim=spec.claim,
            serve=arm.serve,
            concurrencies=spec.concurrencies or [1],  # rates alone: no concurrency to raise
            sol=_arm_sol(arm),
            quantization=context.model.quantization if context else None,
            hardware=hardware_key(context.hardware.gpu_name) if context else None,
            kv_tokens=_kv_tokens(AbPaths(workspace, spec.name), spec, arm),
            tokens_per_request=spec.longest,
            batched_tokens_ceiling=_arm_ceiling(workspace, spec, arm.arm),
        )
    )


def with_gates(paths: AbPaths, spec: AbSpec, arms: Sequence[ArmSummary]) -> list[ArmSummary]:
    """The arms, each with its accuracy gate where it turns on a lever that can change the model's answers."""
    gates = accuracy_gates(paths, spec, arms)
    return [a.model_copy(update={"accuracy": gates.get(a.arm)}) for a in arms]


def accuracy_missing(arms: Sequence[ArmSummary], arm: ArmSummary) -> str | None:
    """What the arm still needs from its accuracy gate against the baseline arm (None: nothing: no lever that can
    change the model's answers, or a pass)."""
    base = next((a for a in arms if a.baseline), None)
    return gate_missing(quality_risks(arm.serve, base.serve if base is not None else None), arm.accuracy)


def close_of(
    workspace: Path, arms: Sequence[ArmSummary], verdict: AbVerdict, levers: Sequence[Lever]
) -> CloseStatus | None:
    """Whether the champion is closed: a VERDICT, its known-good config recorded (for the hardware, engine version
    and model files its own trials ran on), a next lever named, and the accuracy gate's pass where it turns on a lever
    that can change the model's answers."""
    if verdict.champion is None:
        return None
    arm = next(a for a in arms if a.arm == verdict.champion)
    accuracy = accuracy_missing(arms, arm)
    context = arm.points[0].context  # a champion has figures, so a context
    entry = recorded_for(
        arm.serve,
        registry_path(workspace),
        hardware=hardware_key(context.hardware.gpu_name),
        engine=arm.engine,
        engine_version=context.engine.version,
        config_hash=context.model.config_hash,
    )
    draft = (
        f"a VERDICT: the A/B is a DRAFT ({', '.join(verdict.failed)} failed)" if verdict.rigor != "VERDICT" else None
    )
    record_with = f"from_ab and arm={arm.arm}"
    return close_status(
        arm.arm, verdict_missing=draft, entry=entry, record_with=record_with, levers=levers, accuracy_missing=accuracy
    )


def ab_close(workspace: Path, name: str) -> tuple[AbSpec, list[ArmSummary], ArmSummary | None, CloseStatus | None]:
    """An A/B already run, from its files: its spec, its arms, its champion's (None: no champion) and its close."""
    spec, arms, verdict = ab_summary(workspace, name)
    base = baseline_arm(arms, verdict)
    frontier = frontier_for(workspace, base.points[0].context) if base is not None else None
    levers = open_levers(levers_for(workspace, spec, arms, verdict), frontier, ab_under(spec, arms, verdict))
    close = close_of(workspace, arms, verdict, levers)
    return spec, arms, next((a for a in arms if a.arm == verdict.champion), None), close


def headline(arms: Sequence[ArmSummary], verdict: AbVerdict) -> str:
    """The verdict, and each arm's mean ± std and % of SoL at the top concurrency, on the claim's metric (and, for
    arms of two engines, each arm's engine: the champion's is the engine that won)."""
    parts = []
    across = len({a.engine for a in arms}) > 1
    for arm in arms:
        name = f"{arm.arm} ({arm.engine})" if across else arm.arm
        if not arm.points:
            parts.append(f"{name}: no successful trial")
        tops = {p.workload: p for p in arm.points}  # each workload's top concurrency (points come in order)
        parts += [_top_text(name, top, verdict.metric) for top in tops.values()]
    champion = next((a for a in arms if a.arm == verdict.champion), None)
    won = f" ({champion.engine} won)" if across and champion is not None else ""
    gates = [f"{a.arm} {said_of(a.accuracy)}" for a in arms if a.accuracy is not None]
    said = f". Accuracy gate ({ACCURACY_LABEL}): {'; '.join(gates)}" if gates else ""
    return f"{verdict.summary}{won}. " + "; ".join(parts) + said


def _top_text(name: str, top: ArmPoint, metric: str) -> str:
    s = top.metrics.get(metric)
    figure = "-" if s is None else f"{s.mean:,.2f}" + (f" ± {s.std:,.2f}" if s.std is not None else "")
    sol = f", SoL: {top.sol.basis}"
    if top.sol.pct_of_ceiling is not None:
        busy, dram = top.sol.memory_busy_pct, top.sol.dram_active_pct
        seen = f", memory busy {busy:.0f}% (telemetry-backed)" if busy is not None else " (arithmetic)"
        seen += f", DRAM active {dram:.0f}% (DCGM)" if dram is not None else ""
        sol = f", {top.sol.pct_of_ceiling:.1f}% of SoL [{top.sol.key}]{seen}"
    on = f" on {top.workload}" if top.workload else ""
    return f"{name} {figure} {metric}{on} at {load_of(top).label} (n={s.n if s else 0}){sol}"


def failed_trials(paths: AbPaths, records: dict[str, list[TrialRecord]]) -> Unusable | None:
    """Why the A/B measured nothing usable (every trial on record failed) and the fix; None: a trial succeeded."""
    every = [r for done in records.values() for r in done]
    measured = [p for r in every for p in r.points if p.figures is not None and p.figures.all_completed]
    checks = [c.check for p in measured if p.healthy_after for c in p.checks if not c.ok]  # what flagged a measure
    again = f"delete {paths.relative(paths.results.root / 'trials')} (or give the A/B another name) and run it again"
    return unusable("trial", {f"{r.arm}-{r.trial}": None if r.ok else r.reason for r in every}, checks, again)


def ab_result(workspace: Path, spec: AbSpec, plan: AbPlan, *, ran: list[str]) -> AbResult:
    """After a run: every arm's figures over its trials on disk, the verdict, the next levers and the close."""
    paths = AbPaths(workspace, spec.name)
    records = trial_records(paths, spec)
    arms, verdict = plans.summarize_ab(spec, plan.arms, records)
    arms = with_gates(paths, spec, arms)
    predicted = levers_for(workspace, spec, arms, verdict)
    frontier = record_ab(workspace, spec, arms, verdict, predicted)
    levers = open_levers(predicted, frontier, ab_under(spec, arms, verdict))
    close = close_of(workspace, arms, verdict, levers)
    failed = failed_trials(paths, records)
    guards = guard_arms(paths.relative(paths.spec_file), arms, verdict.compared_with, verdict.metric)
    if failed is not None:
        hint = failed.fix
    elif verdict.rigor == "DRAFT":
        hint = "read the failed rules: fix each and run again (ab_run resumes and can add trials)"
    elif verdict.champion:
        hint = "record the champion's known-good config (known_good_record) and try the next lever"
    else:
        hint = "no improvement: keep the baseline, and try the next lever"
    return AbResult(
        ab=spec.name,
        path=paths.relative(paths.spec_file),
        dry_run=False,
        plan=None,
        ran=ran,
        skipped=done_trials(plan),
        known_good=plan.known_good,
        arms=arms,
        verdict=verdict,
        summary=". ".join(
            s for s in (headline(arms, verdict), guards_said(guards), failed and f"FAILED: {failed.cause}") if s
        ),
        next=hint,
        failed=failed.cause if failed is not None else None,
        guards=guards,
        close=close,
        next_levers=levers,
        frontier=said_next(frontier) if frontier is not None else None,
    )


def ab_summary(workspace: Path, name: str) -> tuple[AbSpec, list[ArmSummary], AbVerdict]:
    """An A/B already run, summarized from its files (no target needed: every figure is on disk), each arm with its
    accuracy gate."""
    spec, arms, verdict = ab_arms(workspace, name)
    return spec, with_gates(AbPaths(workspace, name), spec, arms), verdict


__all__ = [
    "accuracy_missing",
    "ab_close",
    "ab_result",
    "ab_summary",
    "close_of",
    "failed_trials",
    "headline",
    "levers_for",
    "trial_records",
    "with_gates",
]
