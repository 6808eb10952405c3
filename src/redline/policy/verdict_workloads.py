"""An A/B's verdict across its named workloads, as a pure function of each workload's own verdict: no I/O here.

    verdict = across_workloads(per_workload, combine="all")

Each workload is judged alone by policy/verdict.py (its trials' figures on that workload, its own Welch test and
rules). Across them:

- each (the default): no champion across them (outcome per_workload): each workload's verdict names its own;
- all: an arm is an improvement only where it is one on every workload; the champion is the improving arm with the
  largest mean gain over every comparison.

It is a VERDICT only when every workload's is: a rule that failed on one failed for the whole.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from redline.models.verdict import AbVerdict, ArmOutcome, RuleCheck
from redline.models.workloads import Combine
from redline.policy.verdict import overall


def across_workloads(per: Sequence[AbVerdict], combine: Combine) -> AbVerdict:
    """One verdict over the workloads' verdicts (each with its `workload` set), by `combine` (each or all: an A/B
    takes no weights)."""
    first = per[0]
    arms = [_arm(a.arm, per) for a in first.arms]
    comparisons = [c for v in per for c in v.comparisons]
    winners = [a.arm for a in arms if a.outcome == "improvement"] if combine == "all" else []

    def gain(arm: str) -> float:
        return statistics.fmean(c.delta_pct or 0.0 for c in comparisons if c.arm == arm)

    champion = max(winners, key=gain) if winners else None
    rules = _rules(per)
    failed = [r.rule for r in rules if not r.held]
    rigor = "DRAFT" if failed else "VERDICT"
    outcome = "per_workload" if combine == "each" else overall(arms, champion)
    heads = "; ".join(f"{v.workload}: {v.summary}" for v in per)
    said = (
        f"a verdict per workload (combine each): {heads}"
        if combine == "each"
        else f"{_head(outcome, champion, first.compared_with)} (combine all): {heads}"
    )
    update: dict[str, Any] = {
        "rigor": rigor,
        "failed": failed,
        "rules": rules,
        "arms": arms,
        "champion": champion,
        "outcome": outcome,
        "comparisons": comparisons,
        "summary": f"{rigor}: {said}",
        "detectable": "; ".join(f"{v.workload}: {v.detectable}" for v in per if v.detectable) or None,
        "flags": [f for v in per for f in v.flags],
        "fell_back": "; ".join(f"{v.workload}: {v.fell_back}" for v in per if v.fell_back) or None,
        "workload": None,
        "workloads": list(per),
    }
    return first.model_copy(update=update)


def _arm(arm: str, per: Sequence[AbVerdict]) -> ArmOutcome:
    """One arm across the workloads: its outcome on each, and improvement only where it improved on every one."""
    found = [(v.workload, next(a for a in v.arms if a.arm == arm)) for v in per]
    kinds = {a.outcome for _, a in found}
    why = "; ".join(f"{w}: {a.outcome.replace('_', ' ')} ({a.why})" for w, a in found)
    if kinds == {"baseline"}:
        return ArmOutcome(arm=arm, outcome="baseline", why="the arm the others are set against, on every workload")
    if kinds == {"improvement"}:
        outcome = "improvement"
    elif "improvement" in kinds and kinds & {"regression", "mixed"} or "mixed" in kinds:
        outcome = "mixed"
    elif "regression" in kinds:
        outcome = "regression"
    elif kinds == {"untestable"}:
        outcome = "untestable"
    else:
        outcome = "no_improvement"
    return ArmOutcome(arm=arm, outcome=outcome, why=why)


def _rules(per: Sequence[AbVerdict]) -> list[RuleCheck]:
    """Each rule as it held over every workload: held only where it held on each, with the first failure's why, or
    each workload's why where they differ (the prompts each sent)."""
    out = []
    for rule in per[0].rules:
        checks = [next(r for r in v.rules if r.rule == rule.rule) for v in per]
        broken = [(v.workload, r) for v, r in zip(per, checks, strict=True) if not r.held]
        if broken:
            why = f"{broken[0][0]}: {broken[0][1].why}"
        elif len({r.why for r in checks}) > 1:
            why = "; ".join(f"{v.workload}: {r.why}" for v, r in zip(per, checks, strict=True))
        else:
            why = rule.why
        out.append(RuleCheck(rule=rule.rule, held=not broken, why=why))
    return out


def _head(outcome: str, champion: str | None, base: str) -> str:
    return {
        "improvement": f"{champion} improves on {base} on every workload",
        "no_improvement": f"no arm improves on {base} on every workload",
        "regression": f"every other arm is worse than {base}",
        "untestable": "nothing measured on both sides to test",
    }[outcome]


__all__ = ["across_workloads"]
