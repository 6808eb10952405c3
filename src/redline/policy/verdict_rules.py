"""The A/B rules, as pure functions of the trials: each one holds or names what broke it (METHODOLOGY.md,
"Verdicts"). policy/verdict.py turns them and the comparisons into a VERDICT or a DRAFT.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redline.models.context import Node
from redline.models.load import Load
from redline.models.verdict import (
    RULES,
    Claim,
    Rule,
    RuleCheck,
)
from redline.policy.noise import DEFAULT_ALPHA as DEFAULT_ALPHA
from redline.policy.workload import MIN_PROMPTS_PER_CONCURRENCY

MIN_TRIALS = 3
LATENCY_METRICS = ("median_tpot_ms", "median_itl_ms")
THROUGHPUT_METRICS = ("output_throughput", "output_throughput_per_gpu", "total_token_throughput")
CLAIM_METRIC = {"latency": "median_tpot_ms", "throughput": "output_throughput"}


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
    workload: tuple[Any, ...]  # (dataset, input_len, output_len[, range_ratio, prefix_len])
    num_prompts: dict[Load, int] = field(default_factory=dict)  # load point -> prompts sent
    metrics: dict[Load, dict[str, float]] = field(default_factory=dict)  # load point -> metric -> value


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
        parts = [
            f"{Node(hostname=k[0], machine_id=k[1], gpu_uuids=list(k[2])).describe()}: {', '.join(v)}"
            for k, v in seen.items()
        ]
        return RuleCheck(
            rule="same_node",
            held=False,
            why=f"the trials ran on {len(keys)} nodes ({'; '.join(parts)}): a cross-node difference "
            "can be the node's, not the config's; run every trial on one node",
        )
    node = ok[0].node if ok else None
    return RuleCheck(
        rule="same_node",
        held=bool(ok),
        why=f"every trial ran on {node.describe()}" if node else "no trial succeeded, so no node to compare",
    )


def rule_min_trials(arms: Sequence[str], ok: Sequence[TrialObservation], min_trials: int) -> RuleCheck:
    counts = {arm: sum(1 for t in ok if t.arm == arm) for arm in arms}
    short = {arm: n for arm, n in counts.items() if n < min_trials}
    if short:
        listed = ", ".join(f"{arm} {n}" for arm, n in short.items())
        return RuleCheck(
            rule="min_trials",
            held=False,
            why=f"each arm needs at least {min_trials} successful trials (mean ± std); {listed}: "
            "run more trials (ab_run resumes and adds them)",
        )
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


PREFIX_SHOWN = {None: "prefix caching at the engine default", True: "prefix caching on", False: "prefix caching off"}
# The rules that hold where every trial ran alike in one respect: the rule, what a trial did, that respect read off
# each trial, and the fix.
_ALIKE: tuple[tuple[Rule, str, Callable[[TrialObservation], Any], str], ...] = (
    (
        "matched_cache",
        "ran",
        lambda t: t.cache,
        "a warm figure set against a cold one measures the warm-up; warm every arm up the same way",
    ),
    (
        "matched_graphs",
        "ran",
        lambda t: t.graphs,
        "an eager win only saves host overhead; run every arm eager or every arm with CUDA graphs",
    ),
    (
        "matched_prefix_caching",
        "ran with",
        lambda t: PREFIX_SHOWN[t.prefix_caching],
        "a prefix-cache replay can manufacture a win; set enable_prefix_caching the same in every arm",
    ),
)


def rules_matched(ok: Sequence[TrialObservation]) -> list[RuleCheck]:
    """matched_cache, matched_graphs, matched_prefix_caching: every trial alike in each."""
    return [_matched(rule, what, _by_arm(ok, get), fix) for rule, what, get, fix in _ALIKE]


def rule_same_workload(ok: Sequence[TrialObservation]) -> RuleCheck:
    def shape(t: TrialObservation) -> str:
        dataset, i, o, *more = t.workload
        ratio, prefix = (*more, None, None)[:2]
        points = ", ".join(f"{c.label} x {t.num_prompts.get(c)}" for c in sorted(t.num_prompts, key=lambda p: p.order))
        spread = f" (+-{ratio:g})" if ratio else ""
        shared = f", a {prefix}-token prefix shared" if prefix else ""
        return f"{dataset} {i}/{o} tokens{spread}{shared} at {points}"

    return _matched(
        "same_workload", "sent", _by_arm(ok, shape), "every arm must send the same prompts at the same concurrencies"
    )


def rule_metric_isolated(claim: Claim, metric: str, ok: Sequence[TrialObservation]) -> RuleCheck:
    if claim == "latency" and metric not in LATENCY_METRICS:
        return RuleCheck(
            rule="metric_isolated",
            held=False,
            why=f"a latency claim rests on {' or '.join(LATENCY_METRICS)}, not {metric}: throughput at "
            "few prompts is mostly ramp and drain",
        )
    if claim == "throughput" and metric not in THROUGHPUT_METRICS:
        return RuleCheck(
            rule="metric_isolated",
            held=False,
            why=f"a throughput claim rests on {' or '.join(THROUGHPUT_METRICS)}, not {metric}",
        )
    if claim == "throughput":
        closed = [(p.concurrency, n) for t in ok for p, n in t.num_prompts.items() if p.concurrency is not None]
        short = sorted({(c, n) for c, n in closed if n < MIN_PROMPTS_PER_CONCURRENCY * c})
        if short:
            listed = ", ".join(f"c={c}: {n} prompts" for c, n in short)
            return RuleCheck(
                rule="metric_isolated",
                held=False,
                why=f"a throughput figure needs at least {MIN_PROMPTS_PER_CONCURRENCY} x c prompts "
                f"(a steady-state window); {listed}: send more prompts, or make a latency claim",
            )
    return RuleCheck(rule="metric_isolated", held=True, why=f"a {claim} claim resting on {metric}")


def rule_named_baseline(baseline: str | None, arms: Sequence[str]) -> RuleCheck:
    if baseline is None:
        return RuleCheck(
            rule="named_baseline",
            held=False,
            why="no baseline was named: name the arm the others are set against (baseline: ARM)",
        )
    if baseline not in arms:
        return RuleCheck(
            rule="named_baseline", held=False, why=f"the baseline {baseline!r} is not an arm ({', '.join(arms)})"
        )
    return RuleCheck(rule="named_baseline", held=True, why=f"set against the named baseline {baseline!r}")


def check_rules(
    trials: Sequence[TrialObservation],
    *,
    arms: Sequence[str],
    baseline: str | None,
    claim: Claim,
    metric: str,
    min_trials: int = MIN_TRIALS,
) -> list[RuleCheck]:
    """Every rule, in RULES order, over the trials that succeeded."""
    ok = [t for t in trials if t.ok]
    checks = [
        rule_same_node(ok),
        rule_min_trials(arms, ok, min_trials),
        *rules_matched(ok),
        rule_same_workload(ok),
        rule_metric_isolated(claim, metric, ok),
        rule_named_baseline(baseline, arms),
    ]
    assert tuple(c.rule for c in checks) == RULES
    return checks
