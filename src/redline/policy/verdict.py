"""The A/B verdict, as a pure function of the trials: VERDICT only when every rule holds (policy/verdict_rules.py),
else a DRAFT naming each rule that failed (METHODOLOGY.md, "Verdicts").

    verdict = ab_verdict(trials, arms=["base", "fp8kv"], baseline="base", claim="latency",
                       metric="median_tpot_ms", alpha=0.05)

Whether a difference is real is the one noise model's call (policy/noise.py): Welch's two-sided t-test at `alpha`
where both sides have >= 2 trials, else a measured or the default band, the basis named; a difference it cannot tell
from the noise is "no improvement". Every verdict states the smallest effect it could have detected, and an
implausible figure (policy/noise.py, `flags_of`) is named and never claimed on.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from redline.models.guards import ArmGuard
from redline.models.load import Load, load_of
from redline.models.metrics import MetricFlag
from redline.models.verdict import AbVerdict, ArmOutcome, Claim, Comparison, Outcome, RuleCheck, WelchFigures
from redline.policy import noise
from redline.policy.noise import Sample, detectable, flags_of, flags_on
from redline.policy.verdict_rules import (
    CLAIM_METRIC,
    DEFAULT_ALPHA,
    LATENCY_METRICS,
    MIN_TRIALS,
    THROUGHPUT_METRICS,
    TrialObservation,
    check_rules,
    stated_test,
)
from redline.policy.welch import welch

# ---- the comparisons -------------------------------------------------------------------------------------------------

OUTCOME_OF: dict[str, Outcome] = {
    "better": "improvement",
    "worse": "regression",
    "inside_noise": "no_improvement",
    "untestable": "untestable",
    "flagged": "untestable",
}
FALLBACK = {"median_itl_ms": "median_tpot_ms"}  # a latency claim on a flagged ITL rests on the TPOT instead


def _values(ok: Sequence[TrialObservation], arm: str, c: Load, metric: str) -> list[float]:
    return [t.metrics[c][metric] for t in ok if t.arm == arm and metric in t.metrics.get(c, {})]


def _samples(ok: Sequence[TrialObservation], arm: str, c: Load) -> dict[str, Sample]:
    """Every metric one arm measured at load point c, over its trials."""
    names = {m for t in ok if t.arm == arm for m in t.metrics.get(c, {})}
    return {m: Sample.of(_values(ok, arm, c, m)) for m in sorted(names)}


def _point_flags(ok: Sequence[TrialObservation], arms: Sequence[str], points: Sequence[Load]) -> list[MetricFlag]:
    """The implausible figures of every arm at every load point."""
    return [f for c in points for arm in arms for f in flags_of(f"{arm} at {c.label}", _samples(ok, arm, c))]


def compare_arm(
    ok: Sequence[TrialObservation],
    arm: str,
    base: str,
    c: Load,
    metric: str,
    alpha: float,
    flags: Sequence[MetricFlag] = (),
) -> Comparison:
    """arm against base at load point c, judged by the one noise model (policy/noise.py)."""
    a, b = _values(ok, arm, c, metric), _values(ok, base, c, metric)
    mine = [f for f in flags_on(metric, flags) if f.where in (f"{arm} at {c.label}", f"{base} at {c.label}")]
    j = noise.compare(metric, Sample.of(b), Sample.of(a), alpha=alpha, flags=mine)
    test = welch(a, b)
    figures = (
        None
        if test is None
        else WelchFigures(t=test.t if abs(test.t) != float("inf") else None, df=test.df, p_value=test.p_value)
    )
    (am, asd), (bm, bsd) = _mean_std(a), _mean_std(b)
    return Comparison(
        arm=arm,
        baseline=base,
        concurrency=c.concurrency,
        rate=c.rate,
        speedup=c.speedup,
        metric=metric,
        direction=j.direction,
        baseline_mean=bm,
        baseline_std=bsd,
        arm_mean=am,
        arm_std=asd,
        n=(len(b), len(a)),
        delta_pct=j.delta_pct,
        welch=figures,
        alpha=alpha,
        outcome=OUTCOME_OF[j.outcome],
        why=j.says,
        noise=j,
    )


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    s = Sample.of(values)
    return s.mean, s.std


def claim_metric(chosen: str, flags: Sequence[MetricFlag]) -> tuple[str, str | None]:
    """The metric the claim rests on: the chosen one, or its fallback where the chosen one is flagged (and why)."""
    alt = FALLBACK.get(chosen)
    if alt is None or not flags_on(chosen, flags) or flags_on(alt, flags):
        return chosen, None
    return alt, f"{chosen} is implausible ({flags_on(chosen, flags)[0].why}): the claim rests on {alt} instead"


def _at(found: Sequence[Comparison]) -> str:
    """Where comparisons were: c=[4, 8] (concurrencies), else each load point's label (4 req/s, x2 arrivals)."""
    points = [load_of(c) for c in found]
    if all(p.concurrency is not None for p in points):
        return f"c={[p.concurrency for p in points]}" if points else ""
    return ", ".join(p.label for p in points)


def arm_outcome(arm: str, comparisons: Sequence[Comparison]) -> ArmOutcome:
    mine = [c for c in comparisons if c.arm == arm]
    kinds = {c.outcome for c in mine}
    better = _at([c for c in mine if c.outcome == "improvement"])
    worse = _at([c for c in mine if c.outcome == "regression"])
    if better and worse:
        return ArmOutcome(arm=arm, outcome="mixed", why=f"better at {better}, worse at {worse}")
    if better:
        return ArmOutcome(arm=arm, outcome="improvement", why=f"better at {better}, no regression elsewhere")
    if worse:
        return ArmOutcome(arm=arm, outcome="regression", why=f"worse at {worse}")
    if not kinds or kinds == {"untestable"}:
        return ArmOutcome(arm=arm, outcome="untestable", why="too few trials to test")
    return ArmOutcome(arm=arm, outcome="no_improvement", why="every difference is inside the noise")


def guarded(outcome: ArmOutcome, guard: ArmGuard | None) -> ArmOutcome:
    """An arm's outcome with every metric judged (its guard: the one comparison, as perf_baseline_diff judges the
    same trials): a figure worse beyond the noise (RED) makes an improvement mixed, and no improvement a regression;
    never the champion, and the frontier records it so."""
    if guard is None or guard.colour != "RED" or outcome.outcome in ("baseline", "regression"):
        return outcome
    said = f"every metric, as perf_baseline_diff judges it: {guard.why}"
    if outcome.outcome in ("improvement", "mixed"):
        return ArmOutcome(arm=outcome.arm, outcome="mixed", why=f"{outcome.why}; but {said}")
    return ArmOutcome(arm=outcome.arm, outcome="regression", why=f"{outcome.why}; but {said}")


def _outcomes(
    arms: Sequence[str], base: str, comparisons: Sequence[Comparison], guards: Sequence[ArmGuard]
) -> list[ArmOutcome]:
    """Every arm's but the baseline's, with its every metric judged."""
    by_arm = {g.arm: g for g in guards}
    return [guarded(arm_outcome(arm, comparisons), by_arm.get(arm)) for arm in arms if arm != base]


def _champion(arms: Sequence[ArmOutcome], comparisons: Sequence[Comparison]) -> str | None:
    winners = [a.arm for a in arms if a.outcome == "improvement"]
    if not winners:
        return None

    def gain(arm: str) -> float:
        return statistics.fmean(c.delta_pct or 0.0 for c in comparisons if c.arm == arm)

    return max(winners, key=gain)


def ab_verdict(
    trials: Sequence[TrialObservation],
    *,
    arms: Sequence[str],
    baseline: str | None,
    claim: Claim,
    metric: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_trials: int = MIN_TRIALS,
    guards: Sequence[ArmGuard] = (),
) -> AbVerdict:
    """The rules, each arm against the baseline at every concurrency, and VERDICT or DRAFT; `guards`: each arm's
    every metric judged against the baseline arm (policy/ab_guards.py), which a RED one's outcome takes."""
    ok, base = [t for t in trials if t.ok], baseline if baseline is not None and baseline in arms else arms[0]
    points = sorted({c for t in ok for c in t.metrics}, key=lambda p: p.order)
    flags = _point_flags(ok, arms, points)
    chosen, fell_back = claim_metric(metric or CLAIM_METRIC[claim], flags)
    rules = check_rules(trials, arms=arms, baseline=baseline, claim=claim, metric=chosen, min_trials=min_trials)
    failed = [r.rule for r in rules if not r.held]
    comparisons = [compare_arm(ok, a, base, c, chosen, alpha, flags) for a in arms if a != base for c in points]
    outcomes = [ArmOutcome(arm=base, outcome="baseline", why="the arm the others are set against")]
    outcomes += _outcomes(arms, base, comparisons, guards)
    champion = _champion(outcomes, comparisons)
    outcome = overall(outcomes, champion)
    seen = detectable([(f"{c.arm} at {load_of(c).label}", c.noise) for c in comparisons if c.noise is not None])
    notes = [seen, *(n for n in (fell_back, _flag_note(flags, chosen)) if n)]
    rigor = "DRAFT" if failed else "VERDICT"
    return AbVerdict(
        **{"rigor": rigor, "failed": failed, "test": stated_test(alpha), "claim": claim},
        **{"rules": rules, "metric": chosen, "baseline": baseline if baseline in arms else None},
        compared_with=base,
        arms=outcomes,
        champion=champion,
        outcome=outcome,
        comparisons=comparisons,
        summary=_summary(rigor, failed, rules, _head(outcome, champion, base, chosen, comparisons, outcomes), notes),
        detectable=seen,
        flags=flags,
        fell_back=fell_back,
    )


def overall(outcomes: Sequence[ArmOutcome], champion: str | None) -> Any:
    """The A/B's outcome from its arms' and its champion."""
    if champion is not None:
        return "improvement"
    kinds = {a.outcome for a in outcomes if a.outcome != "baseline"}
    if kinds and kinds <= {"untestable"}:
        return "untestable"
    if "regression" in kinds and not kinds - {"regression", "untestable"}:
        return "regression"
    return "no_improvement"


def _head(
    outcome: str,
    champion: str | None,
    base: str,
    metric: str,
    comparisons: Sequence[Comparison],
    arms: Sequence[ArmOutcome] = (),
) -> str:
    if outcome == "untestable" and any(c.noise is not None and c.noise.outcome == "flagged" for c in comparisons):
        return f"no claim: {metric} is implausible at every point compared, and no claim rests on a flagged metric"
    best = [f"{c.noise.change} at {load_of(c).label}" for c in comparisons if c.arm == champion and c.noise]
    return {
        "improvement": f"{champion} improves on {base} ({metric}): {', '.join(best)}",
        "no_improvement": f"no improvement on {base} ({metric}): every difference is inside the noise or worse",
        "regression": f"every other arm is worse than {base}: "
        + "; ".join(f"{a.arm} {a.why}" for a in arms if a.outcome == "regression"),
        "untestable": "nothing measured on both sides to test",
    }[outcome]


def _flag_note(flags: Sequence[MetricFlag], metric: str) -> str | None:
    if not flags:
        return None
    names = ", ".join(dict.fromkeys(f"{f.metric} ({f.where})" for f in flags))
    claimed = " (the claim's metric: those points are untestable)" if flags_on(metric, flags) else ""
    return f"implausible, not claimed on: {names}{claimed}"


def _summary(rigor: str, failed: Sequence[str], rules: Sequence[RuleCheck], head: str, notes: Sequence[str]) -> str:
    tail = "".join(f"; {n}" for n in notes)
    if rigor == "VERDICT":
        return f"VERDICT: {head}{tail}"
    whys = "; ".join(f"{r.rule}: {r.why}" for r in rules if not r.held)
    return f"DRAFT ({', '.join(failed)} failed): {head}{tail}. {whys}"


__all__ = [
    "CLAIM_METRIC",
    "DEFAULT_ALPHA",
    "LATENCY_METRICS",
    "MIN_TRIALS",
    "THROUGHPUT_METRICS",
    "TrialObservation",
    "arm_outcome",
    "guarded",
    "check_rules",
    "claim_metric",
    "compare_arm",
    "ab_verdict",
    "overall",
    "stated_test",
]
