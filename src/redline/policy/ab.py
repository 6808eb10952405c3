"""An A/B's figures and verdict, as pure functions of its spec and its trial records: no I/O here.

    arms, verdict = summarize_ab(spec, plans, records)

Each arm gets, per concurrency, every trial's figures and their mean ± std (median TPOT, ITL, TTFT,
output throughput, per GPU and per user: policy/figures.py, as a campaign's), in one context per point (its
exact shape, its trials, its node or nodes), and its mean output throughput against the decode ceiling. The
verdict is policy/verdict.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from redline.engines import get_engine
from redline.models.ab import (
    TRIAL_METRICS,
    AbSpec,
    ArmPlan,
    ArmPoint,
    ArmSummary,
    TrialFigures,
    TrialPoint,
    TrialRecord,
)
from redline.models.bench import BenchResult
from redline.models.context import ContextDescriptor, Node
from redline.models.guards import ArmGuard
from redline.models.load import Load, load_of
from redline.models.serve import ServeConfig, is_eager
from redline.models.sol import SolFigure
from redline.models.verdict import AbVerdict
from redline.policy import figures
from redline.policy.ab_guards import guard_arms, guard_on
from redline.policy.verdict import ab_verdict
from redline.policy.verdict_rules import CLAIM_METRIC, TrialObservation
from redline.policy.verdict_workloads import across_workloads
from redline.policy.workload import length_gate, prompt_gates, seqs_gate

# ---- the plan's workloads: policy/workload.py's, as for campaigns ---------------------------------------------


def run_order(spec: AbSpec) -> list[tuple[int, str, int]]:
    """(order, arm, trial), interleaved: A B A B ..., every arm's trial k before any arm's trial k + 1."""
    pairs = [(arm.name, k) for k in range(1, spec.trials + 1) for arm in spec.arms]
    return [(i, arm, k) for i, (arm, k) in enumerate(pairs, 1)]


# ---- gates on one arm ----------------------------------------------------------------------------------------


def gate_arm(spec: AbSpec, name: str, config: ServeConfig, *, own: bool, source: str) -> tuple[ServeConfig, list[str]]:
    """The arm's config after the methodology gates (policy/workload.py, as for a campaign's cells), and what they
    changed; ValueError or InputError for what they refuse. `own`: the arm itself set max_num_seqs (below the top
    concurrency it is refused); `source`: where it came from otherwise (raised, and said so)."""
    prompts = prompt_gates(spec.loads())
    length_gate(spec.shapes(), config.max_model_len, f"arm {name!r}", "raise it")
    config, seqs = seqs_gate(config, spec.concurrencies, "arm", name, own=own, source=source)
    return config, [*prompts, *seqs]


# ---- figures ---------------------------------------------------------------------------------------------------


def trial_metrics(result: BenchResult, config: ServeConfig) -> dict[str, float]:
    """The A/B's metrics one bench result gives (policy/figures.py, the one extraction)."""
    return figures.metrics_of(result, config, TRIAL_METRICS)


def _point(record: TrialRecord, c: Load, workload: str | None) -> TrialPoint | None:
    return next(
        (p for p in record.points if (p.workload, load_of(p)) == (workload, c) and p.ok and p.figures is not None),
        None,
    )


def _figures(record: TrialRecord, point: TrialPoint) -> TrialFigures:
    m = trial_metrics(point.figures, record.serve)  # type: ignore[arg-type]
    pct = point.sol.pct_of_ceiling if point.sol is not None else None
    return TrialFigures(
        trial=record.trial,
        node=record.node.describe(),
        median_tpot_ms=m.get("median_tpot_ms"),
        median_itl_ms=m.get("median_itl_ms"),
        median_ttft_ms=m.get("median_ttft_ms"),
        output_throughput=m.get("output_throughput"),
        sol_pct=pct,
    )


def _nodes(records: Sequence[TrialRecord]) -> list[Node]:
    seen: dict[tuple[object, ...], Node] = {}
    for r in records:
        seen.setdefault(r.node.identity(), r.node)
    return list(seen.values())


def point_context(first: ContextDescriptor, records: Sequence[TrialRecord], baseline: str | None) -> ContextDescriptor:
    """One point's context over its trials: n trials, the node (or every node, where there were several)."""
    nodes = _nodes(records)
    return first.model_copy(
        update={
            "trials": len(records),
            "node": nodes[0] if len(nodes) == 1 else None,
            "nodes": nodes if len(nodes) > 1 else [],
            "baseline": baseline,
        }
    )


def point_sol(points: Sequence[TrialPoint], mean_throughput: float | None) -> SolFigure:
    """The ceiling the trials were set against, the mean output throughput's % of it, and the trials' mean measured
    memory share (and DCGM's DRAM active) beside it: telemetry-backed, or DCGM's, only where every trial's bench was
    sampled so."""
    figure = next((p.sol for p in points if p.sol is not None), None)
    if figure is None:
        return SolFigure(key=None, basis="no ceiling was worked for these trials")
    busy = [b for p in points if p.sol is not None and (b := p.sol.memory_busy_pct) is not None]
    dram = [d for p in points if p.sol is not None and (d := p.sol.dram_active_pct) is not None]
    backed = bool(busy) and len(busy) == len(points)
    grounded = {
        "rigour": "telemetry-backed" if backed else "arithmetic",
        "memory_busy_pct": round(sum(busy) / len(busy), 2) if backed else None,
        "dram_active_pct": round(sum(dram) / len(dram), 2) if dram and len(dram) == len(points) else None,
    }
    if figure.ceiling_tokens_per_s is None or mean_throughput is None:
        return figure.model_copy(update={"pct_of_ceiling": None, **grounded})
    pct = 100.0 * mean_throughput / figure.ceiling_tokens_per_s
    return figure.model_copy(update={"pct_of_ceiling": pct, **grounded})


def arm_point(
    spec: AbSpec, arm: str, c: Load | int, records: Sequence[TrialRecord], workload: str | None = None
) -> ArmPoint | None:
    c = c if isinstance(c, Load) else Load(concurrency=c)
    used = [(r, p) for r in records if r.ok and (p := _point(r, c, workload)) is not None]
    if not used:
        return None
    per_trial = [trial_metrics(p.figures, r.serve) for r, p in used]  # type: ignore[arg-type]
    metrics = figures.summarize(per_trial, TRIAL_METRICS)
    mean_tp = metrics["output_throughput"].mean if "output_throughput" in metrics else None
    baseline = spec.baseline if spec.baseline != arm else None
    return ArmPoint(
        workload=workload,
        concurrency=c.concurrency,
        rate=c.rate,
        speedup=c.speedup,
        context=point_context(used[0][1].context, [r for r, _ in used], baseline),
        trials=[_figures(r, p) for r, p in used],
        metrics=metrics,
        sol=point_sol([p for _, p in used], mean_tp),
    )


def arm_summary(spec: AbSpec, plan: ArmPlan, records: Sequence[TrialRecord]) -> ArmSummary:
    points = [
        p
        for at in spec.loads()
        for c in at.points
        if (p := arm_point(spec, plan.name, c, records, at.name)) is not None
    ]
    failed = [f"{plan.name}-{r.trial}: {r.reason}" for r in records if not r.ok]
    return ArmSummary(
        arm=plan.name,
        baseline=plan.name == spec.baseline,
        engine=plan.engine,
        serve=plan.serve,
        trials_ok=sum(r.ok for r in records),
        trials_failed=failed,
        points=points,
    )


# ---- the verdict --------------------------------------------------------------------------------------------------


def observation(record: TrialRecord, engine: str, workload: str | None = None) -> TrialObservation:
    """What the rules see of one trial (of an arm of `engine`) on one workload: prefix caching as it ran, on or off,
    the engine's default where the config left it unset, so arms of two engines are judged by what their servers
    did."""
    serve = record.serve
    points = [p for p in record.points if p.workload == workload]
    ok_points = [p for p in points if p.ok and p.figures is not None]
    shape = ok_points[0].context.workload if ok_points else None
    return TrialObservation(
        arm=record.arm,
        trial=record.trial,
        ok=record.ok,
        node=record.node,
        cache="warm" if record.warm else "cold",
        graphs="eager" if is_eager(serve) else "graphs",
        prefix_caching=get_engine(record.engine or engine).prefix_caching(serve),
        workload=(shape.dataset, shape.input_len, shape.output_len, shape.range_ratio, shape.prefix_len)
        if shape
        else ("?", None, None, None, None),
        num_prompts={load_of(p): p.num_prompts for p in points},
        metrics={load_of(p): trial_metrics(p.figures, serve) for p in ok_points},  # type: ignore[arg-type]
    )


def summarize_ab(
    spec: AbSpec,
    plans: Sequence[ArmPlan],
    records: Mapping[str, Sequence[TrialRecord]],
) -> tuple[list[ArmSummary], AbVerdict]:
    """Every arm's figures, and the verdict over every trial recorded (records: arm -> its trial records)."""
    arms = [arm_summary(spec, plan, records.get(plan.name, [])) for plan in plans]
    first = _verdict_on(spec, plans, records, spec.shapes()[0][0])  # the arm compared with, the claim's metric
    guards = guard_arms(f"ab/{spec.name}.yml", arms, first.compared_with, first.metric)
    per = [_verdict_on(spec, plans, records, w, guards) for w, _ in spec.shapes()]
    return arms, per[0] if len(per) == 1 else across_workloads(per, spec.combine)


def _verdict_on(
    spec: AbSpec,
    plans: Sequence[ArmPlan],
    records: Mapping[str, Sequence[TrialRecord]],
    workload: str | None,
    guards: Sequence[ArmGuard] = (),
) -> AbVerdict:
    """The verdict over every trial's figures on one workload (None: the only one), each comparison naming it;
    every arm's every metric judged on that workload (`guards`, policy/ab_guards.py)."""
    observations = [observation(r, plan.engine, workload) for plan in plans for r in records.get(plan.name, [])]
    verdict = ab_verdict(
        observations,
        arms=[p.name for p in plans],
        baseline=spec.baseline,
        claim=spec.claim,
        metric=spec.metric or CLAIM_METRIC[spec.claim],
        alpha=spec.alpha,
        guards=[guard_on(g, workload) for g in guards],
    )
    if workload is None:
        return verdict
    comparisons = [c.model_copy(update={"workload": workload}) for c in verdict.comparisons]
    return verdict.model_copy(update={"workload": workload, "comparisons": comparisons})


__all__ = [
    "arm_point",
    "arm_summary",
    "gate_arm",
    "trial_metrics",
    "observation",
    "point_context",
    "point_sol",
    "run_order",
    "summarize_ab",
]
