"""The A/B verdict, as a pure function of the trials: VERDICT only when every rule holds (policy/verdict_rules.py),
else a DRAFT naming each rule that failed (METHODOLOGY.md, "Verdicts").

    verdict = judge_ab(trials, arms=["base", "fp8kv"], baseline="base", claim="latency",
                       metric="median_tpot_ms", alpha=0.05)

Whether a difference is real is Welch's two-sided t-test at `alpha` (policy/welch.py, standard library only);
a difference it cannot tell from the noise is "no improvement".
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from redline.models.verdict import AbVerdict, ArmOutcome, Claim, Comparison, Outcome, RuleCheck, WelchFigures
from redline.policy.verdict_rules import (
    CLAIM_METRIC,
    DEFAULT_ALPHA,
    DIRECTION,
    LATENCY_METRICS,
    MIN_TRIALS,
    THROUGHPUT_METRICS,
    TrialObservation,
    check_rules,
    stated_test,
)
from redline.policy.welch import welch

# ---- the comparisons -------------------------------------------------------------------------------------------------


def _values(ok: Sequence[TrialObservation], arm: str, c: int, metric: str) -> list[float]:
    return [t.metrics[c][metric] for t in ok if t.arm == arm and metric in t.metrics.get(c, {})]


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None


def compare(ok: Sequence[TrialObservation], arm: str, base: str, c: int, metric: str, alpha: float) -> Comparison:
    """arm against base at concurrency c: the difference, Welch's test, and whether it is real."""
    direction = DIRECTION.get(metric, "higher")
    a, b = _values(ok, arm, c, metric), _values(ok, base, c, metric)
    (am, asd), (bm, bsd) = _mean_std(a), _mean_std(b)
    delta = None
    if am is not None and bm:
        delta = (am - bm) / bm * 100 * (1 if direction == "higher" else -1) + 0.0  # + 0.0: no "-0.00%"
    test = welch(a, b)
    figures = (
        None
        if test is None
        else WelchFigures(t=test.t if abs(test.t) != float("inf") else None, df=test.df, p_value=test.p_value)
    )
    outcome, why = _outcome(delta, test.p_value if test else None, alpha, len(a), len(b))
    return Comparison(
        arm=arm,
        baseline=base,
        concurrency=c,
        metric=metric,
        direction=direction,
        baseline_mean=bm,
        baseline_std=bsd,
        arm_mean=am,
        arm_std=asd,
        n=(len(b), len(a)),
        delta_pct=None if delta is None else round(delta, 4),
        welch=figures,
        alpha=alpha,
        outcome=outcome,
        why=why,
    )


def _outcome(delta: float | None, p: float | None, alpha: float, n_arm: int, n_base: int) -> tuple[Outcome, str]:
    if delta is None or p is None:
        return "untestable", (
            f"Welch's test needs at least 2 trials a side; it has {n_base} (baseline) and {n_arm} (arm)"
        )
    if p >= alpha:
        return "no_improvement", f"{delta:+.2f}% is inside the noise (p = {p:.3g} >= {alpha:g})"
    if delta > 0:
        return "improvement", f"{delta:+.2f}% better, p = {p:.3g} < {alpha:g}"
    return "regression", f"{delta:+.2f}% (worse), p = {p:.3g} < {alpha:g}"


def arm_outcome(arm: str, comparisons: Sequence[Comparison]) -> ArmOutcome:
    mine = [c for c in comparisons if c.arm == arm]
    kinds = {c.outcome for c in mine}
    better = [c.concurrency for c in mine if c.outcome == "improvement"]
    worse = [c.concurrency for c in mine if c.outcome == "regression"]
    if better and worse:
        return ArmOutcome(arm=arm, outcome="mixed", why=f"better at c={better}, worse at c={worse}")
    if better:
        return ArmOutcome(arm=arm, outcome="improvement", why=f"better at c={better}, no regression elsewhere")
    if worse:
        return ArmOutcome(arm=arm, outcome="regression", why=f"worse at c={worse}")
    if not kinds or kinds == {"untestable"}:
        return ArmOutcome(arm=arm, outcome="untestable", why="too few trials to test")
    return ArmOutcome(arm=arm, outcome="no_improvement", why="every difference is inside the noise")


def _champion(arms: Sequence[ArmOutcome], comparisons: Sequence[Comparison]) -> str | None:
    winners = [a.arm for a in arms if a.outcome == "improvement"]
    if not winners:
        return None

    def gain(arm: str) -> float:
        return statistics.fmean(c.delta_pct or 0.0 for c in comparisons if c.arm == arm)

    return max(winners, key=gain)


def judge_ab(
    trials: Sequence[TrialObservation],
    *,
    arms: Sequence[str],
    baseline: str | None,
    claim: Claim,
    metric: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_trials: int = MIN_TRIALS,
) -> AbVerdict:
    """The rules, each arm against the baseline at every concurrency, and VERDICT or DRAFT."""
    chosen = metric or CLAIM_METRIC[claim]
    rules = check_rules(trials, arms=arms, baseline=baseline, claim=claim, metric=chosen, min_trials=min_trials)
    failed = [r.rule for r in rules if not r.held]
    base = baseline if baseline is not None and baseline in arms else arms[0]
    ok = [t for t in trials if t.ok]
    concurrencies = sorted({c for t in ok for c in t.metrics})
    comparisons = [compare(ok, arm, base, c, chosen, alpha) for arm in arms if arm != base for c in concurrencies]
    outcomes = [ArmOutcome(arm=base, outcome="baseline", why="the arm the others are set against")]
    outcomes += [arm_outcome(arm, comparisons) for arm in arms if arm != base]
    champion = _champion(outcomes, comparisons)
    overall = _overall(outcomes, champion)
    rigor = "DRAFT" if failed else "VERDICT"
    return AbVerdict(
        rigor=rigor,
        failed=failed,
        rules=rules,
        test=stated_test(alpha),
        claim=claim,
        metric=chosen,
        baseline=baseline if baseline in arms else None,
        compared_with=base,
        arms=outcomes,
        champion=champion,
        outcome=overall,
        comparisons=comparisons,
        summary=_summary(rigor, failed, rules, overall, champion, base, chosen),
    )


def _overall(outcomes: Sequence[ArmOutcome], champion: str | None) -> Any:
    if champion is not None:
        return "improvement"
    kinds = {a.outcome for a in outcomes if a.outcome != "baseline"}
    if kinds and kinds <= {"untestable"}:
        return "untestable"
    if "regression" in kinds and not kinds - {"regression", "untestable"}:
        return "regression"
    return "no_improvement"


def _summary(
    rigor: str,
    failed: Sequence[str],
    rules: Sequence[RuleCheck],
    outcome: str,
    champion: str | None,
    base: str,
    metric: str,
) -> str:
    head = {
        "improvement": f"{champion} improves on {base} ({metric})",
        "no_improvement": f"no improvement on {base} ({metric}): every difference is inside the noise or worse",
        "regression": f"every other arm is worse than {base} ({metric})",
        "untestable": "too few trials to test any difference",
    }[outcome]
    if rigor == "VERDICT":
        return f"VERDICT: {head}"
    whys = "; ".join(f"{r.rule}: {r.why}" for r in rules if not r.held)
    return f"DRAFT ({', '.join(failed)} failed): {head}. {whys}"


__all__ = [
    "CLAIM_METRIC",
    "DEFAULT_ALPHA",
    "DIRECTION",
    "LATENCY_METRICS",
    "MIN_TRIALS",
    "THROUGHPUT_METRICS",
    "TrialObservation",
    "arm_outcome",
    "check_rules",
    "compare",
    "judge_ab",
    "stated_test",
]
