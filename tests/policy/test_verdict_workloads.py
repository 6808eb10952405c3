"""An A/B across named workloads (policy/verdict_workloads.py): each workload judged alone by its own test, then
one answer across them by the one combiner (policy/combine.py, tests/policy/test_combine.py): combine each names
none, combine all only an arm that improved on every workload; a rule broken on one workload makes the whole a
DRAFT."""

from __future__ import annotations

from dataclasses import replace

import pytest

from redline.models.verdict import AbVerdict
from redline.policy.verdict_workloads import across_workloads
from tests.policy.test_verdict_rules import BASE, BETTER, OTHER, judge, trials

WORSE = [90.0, 91.0, 89.0]
SAME = [100.5, 99.5, 100.0]


def on(workload: str, cand: list[float], **kw: object) -> AbVerdict:
    """A workload's own verdict, as policy/ab.py makes it: judged alone, then named."""
    v = judge(trials(BASE, cand), **kw)
    return v.model_copy(
        update={
            "workload": workload,
            "comparisons": [c.model_copy(update={"workload": workload}) for c in v.comparisons],
        }
    )


def test_all_names_an_arm_that_improved_on_every_workload() -> None:
    v = across_workloads([on("chat", BETTER), on("long", BETTER)], "all")
    assert v.rigor == "VERDICT" and v.outcome == "improvement" and v.champion == "cand"
    assert [w.workload for w in v.workloads] == ["chat", "long"]
    assert {(c.workload, c.concurrency) for c in v.comparisons} == {
        ("chat", 1),
        ("chat", 16),
        ("long", 1),
        ("long", 16),
    }
    assert v.summary.startswith("VERDICT: cand improves on base across the workloads (combine all): chat: VERDICT: ")
    cand = next(a for a in v.arms if a.arm == "cand")
    assert cand.why == "chat +10.0% (win), long +10.0% (win): a win on every workload"  # policy/combine.py's words


@pytest.mark.parametrize(
    ("long", "outcome", "arm"),
    [(SAME, "no_improvement", "no_improvement"), (WORSE, "no_improvement", "mixed")],
)
def test_all_names_no_champion_where_one_workload_did_not_improve(long: list[float], outcome: str, arm: str) -> None:
    v = across_workloads([on("chat", BETTER), on("long", long)], "all")
    assert v.champion is None and v.outcome == outcome
    cand = next(a for a in v.arms if a.arm == "cand")
    assert cand.outcome == arm and cand.why.startswith("chat +10.0% (win), long ")


def test_a_regression_on_every_workload_is_a_regression() -> None:
    v = across_workloads([on("chat", WORSE), on("long", WORSE)], "all")
    assert v.outcome == "regression" and v.champion is None


def test_each_names_no_champion_across_and_keeps_each_workload_s_own() -> None:
    chat, long = on("chat", BETTER), on("long", SAME)
    v = across_workloads([chat, long], "each")
    assert v.outcome == "per_workload" and v.champion is None
    assert [(w.workload, w.champion, w.outcome) for w in v.workloads] == [
        ("chat", "cand", "improvement"),
        ("long", None, "no_improvement"),
    ]
    assert v.workloads == [chat, long]  # each verdict is the one that workload's trials give alone
    assert v.summary.startswith("VERDICT: a verdict per workload (combine each): chat: VERDICT: cand improves")


def test_a_rule_broken_on_one_workload_makes_the_whole_a_draft_and_names_it() -> None:
    moved = [replace(t, node=OTHER) if t.arm == "cand" and t.trial == 3 else t for t in trials(BASE, BETTER)]
    chat = judge(moved).model_copy(update={"workload": "chat"})
    v = across_workloads([chat, on("long", BETTER)], "all")
    assert v.rigor == "DRAFT" and v.failed == ["same_node"]
    rule = next(r for r in v.rules if r.rule == "same_node")
    assert not rule.held and rule.why.startswith("chat: ")


def test_a_rule_held_on_every_workload_says_each_workload_s_own_prompts() -> None:
    chat = on("chat", BETTER)
    long = judge([replace(t, workload=("random", 4096, 256)) for t in trials(BASE, BETTER)])
    v = across_workloads([chat, long.model_copy(update={"workload": "long"})], "each")
    rule = next(r for r in v.rules if r.rule == "same_workload")
    assert (
        rule.held
        and rule.why.startswith("chat: every trial sent random ")
        and "; long: every trial sent " in (rule.why)
    )
    assert "random 4096/256 tokens" in rule.why
    same_node = next(r for r in v.rules if r.rule == "same_node")
    assert not same_node.why.startswith("chat: ")  # the same words on each: said once
