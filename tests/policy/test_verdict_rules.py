"""The A/B rules (policy/verdict.py): every rule holding gives a VERDICT; each rule broken alone gives a DRAFT that
names it and only it; Welch's test decides improvement, regression or no improvement."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from redline.models.context import Node
from redline.models.load import Load
from redline.models.verdict import RULES
from redline.policy.verdict import ab_verdict
from redline.policy.verdict_rules import TrialObservation

NODE = Node(hostname="gpu-a", machine_id="m-a", gpu_uuids=["GPU-1"])
OTHER = Node(hostname="gpu-b", machine_id="m-b", gpu_uuids=["GPU-9"])
BASE = [100.0, 101.0, 99.0]
BETTER = [110.0, 111.0, 109.0]


def trial(arm: str, k: int, value: float, *, tpot: float = 6.0, **changes: Any) -> TrialObservation:
    t = TrialObservation(
        arm=arm,
        trial=k,
        ok=True,
        node=NODE,
        cache="warm",
        graphs="graphs",
        prefix_caching=None,
        workload=("random", 1024, 128),
        num_prompts={Load(1): 4, Load(16): 64},
        metrics={Load(c): {"output_throughput": value * c, "median_tpot_ms": tpot} for c in (1, 16)},
    )
    return replace(t, **changes)


def trials(base: list[float] = BASE, cand: list[float] = BETTER) -> list[TrialObservation]:
    """Interleaved A B A B A B, as ab_run records them."""
    out = []
    for k, (a, b) in enumerate(zip(base, cand, strict=True), 1):
        out += [trial("base", k, a), trial("cand", k, b)]
    return out


def judge(observed: list[TrialObservation], **kw: Any):  # noqa: ANN201
    args = {"arms": ["base", "cand"], "baseline": "base", "claim": "throughput"} | kw
    return ab_verdict(observed, **args)


def test_every_rule_holding_is_a_verdict() -> None:
    v = judge(trials())
    assert v.rigor == "VERDICT" and v.failed == [] and [r.rule for r in v.rules] == list(RULES)
    assert all(r.held for r in v.rules)
    assert v.champion == "cand" and v.outcome == "improvement" and v.summary.startswith("VERDICT: cand improves")
    assert "Welch's t-test, two-sided, at alpha 0.05" in v.test
    at16 = next(c for c in v.comparisons if c.concurrency == 16)
    assert at16.outcome == "improvement" and at16.delta_pct == pytest.approx(10.0) and at16.welch.p_value < 0.05


def _other_node(ts: list[TrialObservation]) -> list[TrialObservation]:
    return [replace(t, node=OTHER) if (t.arm, t.trial) == ("cand", 3) else t for t in ts]


def _cand(**changes: Any):  # noqa: ANN202
    return lambda ts: [replace(t, **changes) if t.arm == "cand" else t for t in ts]


BROKEN = {
    "same_node": (_other_node, {}),
    "min_trials": (lambda ts: [t for t in ts if (t.arm, t.trial) != ("cand", 3)], {}),
    "matched_cache": (_cand(cache="cold"), {}),
    "matched_graphs": (_cand(graphs="eager"), {}),
    "matched_prefix_caching": (_cand(prefix_caching=True), {}),
    "same_workload": (_cand(workload=("random", 2048, 128)), {}),
    "metric_isolated": (lambda ts: ts, {"claim": "latency", "metric": "output_throughput"}),
    "named_baseline": (lambda ts: ts, {"baseline": None}),
}


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_broken_alone_is_a_draft_naming_it(rule: str) -> None:
    assert set(BROKEN) == set(RULES)
    change, kw = BROKEN[rule]
    v = judge(change(trials()), **kw)
    assert v.rigor == "DRAFT" and v.failed == [rule], [r for r in v.rules if not r.held]
    why = next(r.why for r in v.rules if r.rule == rule)
    assert v.summary.startswith(f"DRAFT ({rule} failed)") and why in v.summary


def test_a_failed_trial_does_not_count_toward_the_trials() -> None:
    observed = [replace(t, ok=False) if (t.arm, t.trial) == ("base", 2) else t for t in trials()]
    v = judge(observed)
    assert v.failed == ["min_trials"] and "base 2" in v.rules[1].why


def test_a_throughput_claim_at_few_prompts_is_not_isolated() -> None:
    few = [replace(t, num_prompts={Load(1): 4, Load(16): 20}) for t in trials()]  # 20 < 2 x 16
    v = judge(few)
    assert v.failed == ["metric_isolated"] and "c=16: 20 prompts" in v.rules[6].why
    latency = judge(few, claim="latency")  # a latency claim on median TPOT does not need a steady window
    assert "metric_isolated" not in latency.failed and latency.metric == "median_tpot_ms"


def test_an_unknown_node_fails_the_same_node_rule() -> None:
    v = judge([replace(t, node=None) if t.trial == 1 else t for t in trials()])
    assert v.failed == ["same_node"] and "did not record their node" in v.rules[0].why


def test_a_difference_inside_the_noise_is_no_improvement() -> None:
    v = judge(trials(cand=[101.5, 97.0, 103.0]))
    assert v.rigor == "VERDICT" and v.champion is None and v.outcome == "no_improvement"
    assert all(c.outcome == "no_improvement" and "inside the noise" in c.why for c in v.comparisons)


def test_a_real_slowdown_is_a_regression_and_latency_direction_is_lower() -> None:
    v = judge(trials(cand=[90.0, 91.0, 89.0]))
    assert v.outcome == "regression" and v.arms[1].outcome == "regression"
    faster = [
        replace(t, metrics={Load(c): {"median_tpot_ms": 5.0 + 0.01 * t.trial} for c in (1, 16)})
        if t.arm == "cand"
        else replace(t, metrics={Load(c): {"median_tpot_ms": 6.0 + 0.01 * t.trial} for c in (1, 16)})
        for t in trials()
    ]
    lat = judge(faster, claim="latency")
    assert lat.rigor == "VERDICT" and lat.champion == "cand" and lat.comparisons[0].direction == "lower"
    assert lat.comparisons[0].delta_pct == pytest.approx((6.02 - 5.02) / 6.02 * 100, rel=1e-3)


def test_one_trial_a_side_is_judged_on_the_default_band_and_says_so() -> None:
    v = judge(trials(base=[100.0], cand=[120.0]), min_trials=1)
    (c1, c16) = v.comparisons
    assert v.rigor == "VERDICT" and v.outcome == "improvement" and c16.welch is None
    assert c16.noise is not None and (c16.noise.basis, c16.noise.band_pct, c16.noise.mde_pct) == ("default", 3.0, 3.0)
    assert "better by 20.00%" in c16.why and "the 3% band, METHODOLOGY.md's default" in c16.why
    assert "smallest detectable effect: 3% (cand at c=1, default)" in v.summary
    inside = judge(trials(base=[100.0], cand=[102.0]), min_trials=1)
    assert inside.outcome == "no_improvement" and inside.comparisons[0].noise.outcome == "inside_noise"
