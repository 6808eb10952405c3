"""The A/B rules, as pure functions of the trials: VERDICT only when every rule holds, else a DRAFT naming each
rule that failed (METHODOLOGY.md, "Verdicts").

    verdict = judge_ab(trials, arms=["base", "fp8kv"], baseline="base", claim="latency",
                       metric="median_tpot_ms", alpha=0.05)

Whether a difference is real is Welch's two-sided t-test at `alpha` (policy/welch.py, standard library only);
a difference it cannot tell from the noise is "no improvement".
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redline.models.context import Node
from redline.models.verdict import (
    RULES, AbVerdict, ArmOutcome, Claim, Comparison, Outcome, Rule, RuleCheck, WelchFigures,
)
from redline.policy.welch import welch

MIN_TRIALS = 3
MIN_PROMPTS_PER_CONCURRENCY = 2  # a throughput figure needs one full batch beyond ramp and drain
DEFAULT_ALPHA = 0.05
LATENCY_METRICS = ("median_tpot_ms", "median_itl_ms")
THROUGHPUT_METRICS = ("output_throughput", "output_throughput_per_gpu", "total_token_throughput")
CLAIM_METRIC = {"latency": "median_tpot_ms", "throughput": "output_throughput"}
DIRECTION = {"median_tpot_ms": "lower", "median_itl_ms": "lower", "median_ttft_ms": "lower",
             "output_throughput": "higher", "output_throughput_per_gpu": "higher", "total_token_throughput": "higher"}


@dataclass(frozen=True)
class TrialObservation:
    """One trial of one arm (a clean boot and its benches), as the rules see it."""

    arm: str
    trial: int
    ok: bool
    node: Node | None
    cache: str  # warm | cold
    graphs: str  # eager | graphs
    prefix_caching: bool | None
    workload: tuple[Any, ...]  # (dataset, input_len, output_len)
    num_prompts: dict[int, int] = field(default_factory=dict)  # concurrency -> prompts sent
    metrics: dict[int, dict[str, float]] = field(default_factory=dict)  # concurrency -> metric -> value


def stated_test(alpha: float) -> str:
    return f"Welch's t-test, two-sided, at alpha {alpha:g} (standard library; METHODOLOGY.md, 'Verdicts')"


# ---- the rules ---------------------------------------------------------------------------------------------------


def _node_key(node: Node | None) -> tuple[Any, ...] | None:
    return None if node is None or (node.hostname is None and node.machine_id is None) else node.identity()


def rule_same_node(ok: Sequence[TrialObservation]) -> RuleCheck:
    keys = {_node_key(t.node) for t in ok}
    if None in keys:
        missing = sorted({f"{t.arm}-{t.trial}" for t in ok if _node_key(t.node) is None})
        return RuleCheck(rule="same_node", held=False, why=f"trials {', '.join(missing)} did not record their node")
    if len(keys) > 1:
        seen: dict[tuple[Any, ...], list[str]] = {}
        for t in ok:
            seen.setdefault(_node_key(t.node), []).append(f"{t.arm}-{t.trial}")  # type: ignore[arg-type]
        parts = [f"{Node(hostname=k[0], machine_id=k[1], gpu_uuids=list(k[2])).describe()}: {', '.join(v)}"
                 for k, v in seen.items()]
        return RuleCheck(rule="same_node", held=False,
                         why=f"the trials ran on {len(keys)} nodes ({'; '.join(parts)}): a cross-node difference "
                             "can be the node's, not the config's; run every trial on one node")
    node = ok[0].node if ok else None
    return RuleCheck(rule="same_node", held=bool(ok), why=f"every trial ran on {node.describe()}" if node
                     else "no trial succeeded, so no node to compare")


def rule_min_trials(arms: Sequence[str], ok: Sequence[TrialObservation], min_trials: int) -> RuleCheck:
    counts = {arm: sum(1 for t in ok if t.arm == arm) for arm in arms}
    short = {arm: n for arm, n in counts.items() if n < min_trials}
    if short:
        listed = ", ".join(f"{arm} {n}" for arm, n in short.items())
        return RuleCheck(rule="min_trials", held=False,
                         why=f"each arm needs at least {min_trials} successful trials (mean ± std); {listed}: "
                             "run more trials (ab_run resumes and adds them)")
    return RuleCheck(rule="min_trials", held=True, why=f"every arm has at least {min_trials} successful trials")


def _matched(rule: Rule, what: str, values: dict[str, set[Any]], fix: str) -> RuleCheck:
    every = set().union(*values.values()) if values else set()
    if len(every) > 1:
        listed = "; ".join(f"{arm}: {', '.join(map(str, sorted(v, key=str)))}" for arm, v in values.items())
        return RuleCheck(rule=rule, held=False, why=f"{what} differs across trials ({listed}): {fix}")
    only = next(iter(every), None)
    return RuleCheck(rule=rule, held=True, why=f"every trial {what} {only}")


def _by_arm(ok: Sequence[TrialObservation], get: Callable[[TrialObservation], Any]) -> dict[str, set[Any]]:
    out: dict[str, set[Any]] = {}
    for t in ok:
        out.setdefault(t.arm, set()).add(get(t))
    return out


def rule_matched_cache(ok: Sequence[TrialObservation]) -> RuleCheck:
    return _matched("matched_cache", "ran", _by_arm(ok, lambda t: t.cache),
                    "a warm figure set against a cold one measures the warm-up; warm every arm up the same way")


def rule_matched_graphs(ok: Sequence[TrialObservation]) -> RuleCheck:
    return _matched("matched_graphs", "ran", _by_arm(ok, lambda t: t.graphs),
                    "an eager win only saves host overhead; run every arm eager or every arm with CUDA graphs")


def rule_matched_prefix_caching(ok: Sequence[TrialObservation]) -> RuleCheck:
    shown = {None: "prefix caching at the engine default", True: "prefix caching on", False: "prefix caching off"}
    return _matched("matched_prefix_caching", "ran with", _by_arm(ok, lambda t: shown[t.prefix_caching]),
                    "a prefix-cache replay can manufacture a win; set enable_prefix_caching the same in every arm")


def rule_same_workload(ok: Sequence[TrialObservation]) -> RuleCheck:
    def shape(t: TrialObservation) -> str:
        dataset, i, o = t.workload
        points = ", ".join(f"c={c} x {t.num_prompts.get(c)}" for c in sorted(t.num_prompts))
        return f"{dataset} {i}/{o} tokens at {points}"

    return _matched("same_workload", "sent", _by_arm(ok, shape),
                    "every arm must send the same prompts at the same concurrencies")


def rule_metric_isolated(claim: Claim, metric: str, ok: Sequence[TrialObservation]) -> RuleCheck:
    if claim == "latency" and metric not in LATENCY_METRICS:
        return RuleCheck(rule="metric_isolated", held=False,
                         why=f"a latency claim rests on {' or '.join(LATENCY_METRICS)}, not {metric}: throughput at "
                             "few prompts is mostly ramp and drain")
    if claim == "throughput" and metric not in THROUGHPUT_METRICS:
        return RuleCheck(rule="metric_isolated", held=False,
                         why=f"a throughput claim rests on {' or '.join(THROUGHPUT_METRICS)}, not {metric}")
    if claim == "throughput":
        short = sorted({(c, n) for t in ok for c, n in t.num_prompts.items() if n < MIN_PROMPTS_PER_CONCURRENCY * c})
        if short:
            listed = ", ".join(f"c={c}: {n} prompts" for c, n in short)
            return RuleCheck(rule="metric_isolated", held=False,
                             why=f"a throughput figure needs at least {MIN_PROMPTS_PER_CONCURRENCY} x c prompts "
                                 f"(a steady-state window); {listed}: send more prompts, or make a latency claim")
    return RuleCheck(rule="metric_isolated", held=True, why=f"a {claim} claim resting on {metric}")


def rule_named_baseline(baseline: str | None, arms: Sequence[str]) -> RuleCheck:
    if baseline is None:
        return RuleCheck(rule="named_baseline", held=False,
                         why="no baseline was named: name the arm the others are set against (baseline: ARM)")
    if baseline not in arms:
        return RuleCheck(rule="named_baseline", held=False,
                         why=f"the baseline {baseline!r} is not an arm ({', '.join(arms)})")
    return RuleCheck(rule="named_baseline", held=True, why=f"set against the named baseline {baseline!r}")


def check_rules(trials: Sequence[TrialObservation], *, arms: Sequence[str], baseline: str | None, claim: Claim,
                metric: str, min_trials: int = MIN_TRIALS) -> list[RuleCheck]:
    """Every rule, in RULES order, over the trials that succeeded."""
    ok = [t for t in trials if t.ok]
    checks = [
        rule_same_node(ok), rule_min_trials(arms, ok, min_trials), rule_matched_cache(ok), rule_matched_graphs(ok),
        rule_matched_prefix_caching(ok), rule_same_workload(ok), rule_metric_isolated(claim, metric, ok),
        rule_named_baseline(baseline, arms),
    ]
    assert tuple(c.rule for c in checks) == RULES
    return checks


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
    figures = None if test is None else WelchFigures(
        t=test.t if abs(test.t) != float("inf") else None, df=test.df, p_value=test.p_value)
    outcome, why = _outcome(delta, test.p_value if test else None, alpha, len(a), len(b))
    return Comparison(arm=arm, baseline=base, concurrency=c, metric=metric, direction=direction, baseline_mean=bm,
                      baseline_std=bsd, arm_mean=am, arm_std=asd, n=(len(b), len(a)),
                      delta_pct=None if delta is None else round(delta, 4), welch=figures, alpha=alpha,
                      outcome=outcome, why=why)


def _outcome(delta: float | None, p: float | None, alpha: float, n_arm: int, n_base: int) -> tuple[Outcome, str]:
    if delta is None or p is None:
        return "untestable", (f"Welch's test needs at least 2 trials a side; it has {n_base} (baseline) and "
                              f"{n_arm} (arm)")
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


def judge_ab(trials: Sequence[TrialObservation], *, arms: Sequence[str], baseline: str | None, claim: Claim,
             metric: str | None = None, alpha: float = DEFAULT_ALPHA, min_trials: int = MIN_TRIALS) -> AbVerdict:
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
    return AbVerdict(rigor=rigor, failed=failed, rules=rules, test=stated_test(alpha), claim=claim, metric=chosen,
                     baseline=baseline if baseline in arms else None, compared_with=base, arms=outcomes,
                     champion=champion, outcome=overall, comparisons=comparisons,
                     summary=_summary(rigor, failed, rules, overall, champion, base, chosen))


def _overall(outcomes: Sequence[ArmOutcome], champion: str | None) -> Any:
    if champion is not None:
        return "improvement"
    kinds = {a.outcome for a in outcomes if a.outcome != "baseline"}
    if kinds and kinds <= {"untestable"}:
        return "untestable"
    if "regression" in kinds and not kinds - {"regression", "untestable"}:
        return "regression"
    return "no_improvement"


def _summary(rigor: str, failed: Sequence[str], rules: Sequence[RuleCheck], outcome: str, champion: str | None,
             base: str, metric: str) -> str:
    head = {"improvement": f"{champion} improves on {base} ({metric})",
            "no_improvement": f"no improvement on {base} ({metric}): every difference is inside the noise or worse",
            "regression": f"every other arm is worse than {base} ({metric})",
            "untestable": "too few trials to test any difference"}[outcome]
    if rigor == "VERDICT":
        return f"VERDICT: {head}"
    whys = "; ".join(f"{r.rule}: {r.why}" for r in rules if not r.held)
    return f"DRAFT ({', '.join(failed)} failed): {head}. {whys}"


__all__ = [
    "CLAIM_METRIC", "DEFAULT_ALPHA", "DIRECTION", "LATENCY_METRICS", "MIN_TRIALS", "THROUGHPUT_METRICS",
    "TrialObservation", "arm_outcome", "check_rules", "compare", "judge_ab", "stated_test",
]
