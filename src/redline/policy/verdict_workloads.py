"""An A/B's verdict across its named workloads, as a pure function of each workload's own verdict: no I/O here.

    verdict = across_workloads(per_workload, combine="all")

Each workload is judged alone by policy/verdict.py (its trials' figures on that workload, its own Welch test and
rules). Across them, `combine` by the one combiner a campaign's champion uses too (policy/combine.py: each, all,
weights; METHODOLOGY.md rule 51), an arm's gain on a workload the mean of its comparisons' there and its band their
mean band.

It is a VERDICT only when every workload's is: a rule that failed on one failed for the whole.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from redline.models.verdict import AbVerdict, ArmOutcome, RuleCheck
from redline.models.workloads import Combine
from redline.policy.combine import Across, Call, OnWorkload, across, champion_of, rule_of
from redline.policy.verdict import overall

ARM_CALL: dict[str, Call] = {
    "baseline": "baseline",
    "improvement": "win",
    "regression": "worse",
    "mixed": "mixed",
    "no_improvement": "no_improvement",
    "untestable": "not_ranked",
}
CALL_ARM: dict[Call, Any] = {
    "baseline": "baseline",
    "win": "improvement",
    "worse": "regression",
    "mixed": "mixed",
    "no_improvement": "no_improvement",
    "not_ranked": "untestable",
}


def across_workloads(per: Sequence[AbVerdict], combine: Combine) -> AbVerdict:
    """One verdict over the workloads' verdicts (each with its `workload` set), by `combine`."""
    first = per[0]
    judged = {a.arm: _arm(a.arm, per, combine) for a in first.arms}
    arms = [ArmOutcome(arm=name, outcome=CALL_ARM[j.call], why=j.why) for name, j in judged.items()]
    champion = champion_of(judged) if combine != "each" else None
    rules = _rules(per)
    failed = [r.rule for r in rules if not r.held]
    rigor = "DRAFT" if failed else "VERDICT"
    outcome = "per_workload" if combine == "each" else overall(arms, champion)
    heads = "; ".join(f"{v.workload}: {v.summary}" for v in per)
    said = (
        f"a verdict per workload (combine each): {heads}"
        if combine == "each"
        else f"{_head(outcome, champion, first.compared_with)} (combine {rule_of(combine)}): {heads}"
    )
    update: dict[str, Any] = {
        "rigor": rigor,
        "failed": failed,
        "rules": rules,
        "arms": arms,
        "champion": champion,
        "outcome": outcome,
        "comparisons": [c for v in per for c in v.comparisons],
        "summary": f"{rigor}: {said}",
        "detectable": "; ".join(f"{v.workload}: {v.detectable}" for v in per if v.detectable) or None,
        "flags": [f for v in per for f in v.flags],
        "fell_back": "; ".join(f"{v.workload}: {v.fell_back}" for v in per if v.fell_back) or None,
        "workload": None,
        "workloads": list(per),
    }
    return first.model_copy(update=update)


def _on(verdict: AbVerdict, arm: str) -> OnWorkload:
    """An arm's call on one workload, in the combiner's words: its gain the mean of its comparisons there."""
    outcome = next(a for a in verdict.arms if a.arm == arm)
    mine = [c for c in verdict.comparisons if c.arm == arm and c.delta_pct is not None]
    bands = [c.noise.band_pct for c in mine if c.noise is not None and c.noise.band_pct is not None]
    gain = statistics.fmean(c.delta_pct or 0.0 for c in mine) if mine else None
    band = statistics.fmean(bands) if bands else None
    call = ARM_CALL[outcome.outcome]
    return OnWorkload(str(verdict.workload), call, gain if call != "baseline" else None, band, outcome.why)


def _arm(arm: str, per: Sequence[AbVerdict], combine: Combine) -> Across:
    """One arm across the workloads by the one rule; under each, its outcome on each workload said."""
    found = [_on(v, arm) for v in per]
    if combine != "each":
        return across(combine, found)
    why = "; ".join(f"{f.workload}: {f.call.replace('_', ' ')} ({f.why})" for f in found)
    calls = {f.call for f in found}
    call: Call = (
        next(iter(calls)) if len(calls) == 1 else "mixed" if calls & {"win", "worse", "mixed"} else "no_improvement"
    )
    return Across(call, None, None, why)


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
        "improvement": f"{champion} improves on {base} across the workloads",
        "no_improvement": f"no arm improves on {base} across the workloads",
        "regression": f"every other arm is worse than {base}",
        "untestable": "nothing measured on both sides to test",
    }[outcome]


__all__ = ["across_workloads"]
