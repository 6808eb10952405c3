"""One combiner across named workloads (policy/combine.py; issue 39, item 3): `each`, `all` and `weights` mean one thing
for a campaign's cell and an A/B's arm. Before it, `combine: all` named the cell with the largest smallest gain in a
campaign and the arm with the largest mean gain in an A/B, and an A/B refused `weights`."""

from __future__ import annotations

import pytest

from redline.models.context import Workload
from redline.models.workloads import Weights
from redline.policy.combine import Across, OnWorkload, across, champion_of
from redline.policy.verdict_workloads import across_workloads
from redline.policy.workload_champion import select
from tests.campaign.helpers import campaign, verdict
from tests.policy.test_verdict_rules import BETTER
from tests.policy.test_verdict_workloads import on

WEIGHTS = Weights(weights={"chat": 3, "long": 1})
WORSE = [96.0, 96.5, 95.5]  # 4% under the baseline's 100, beyond its spread


def test_all_is_a_win_on_every_workload_and_its_gain_is_the_smallest() -> None:
    win = [OnWorkload("chat", "win", 12.0, 4.0), OnWorkload("long", "win", 5.0, 4.0)]
    assert across("all", win) == Across(
        "win", 5.0, None, "chat +12.0% (win), long +5.0% (win): a win on every workload"
    )
    mixed = across("all", [OnWorkload("chat", "win", 12.0, 4.0), OnWorkload("long", "worse", -6.0, 4.0)])
    assert (mixed.call, mixed.gain) == ("mixed", -6.0)
    assert across("all", [OnWorkload("chat", "win", 12.0, 4.0), OnWorkload("long", "not_ranked", None, None, "red")])
    assert champion_of({"a": Across("win", 5.0, None, ""), "b": Across("win", 9.0, None, "")}) == "b"


def test_weights_set_the_weighted_gain_against_the_weighted_band() -> None:
    found = across(WEIGHTS, [OnWorkload("chat", "win", 12.0, 4.0), OnWorkload("long", "worse", -6.0, 4.0)])
    assert (found.call, found.gain, found.band) == ("win", 7.5, 4.0)  # (3 x 12 - 6) / 4 = 7.5 > 4
    assert found.why.endswith("weighted gain +7.50% against a weighted noise band of 4.00%")


def test_each_names_no_answer_across_the_workloads() -> None:
    assert across("each", [OnWorkload("chat", "win", 12.0, 4.0)]).call == "not_ranked"


@pytest.mark.parametrize(("combine", "cell", "arm"), [("all", "mixed", "mixed"), (WEIGHTS, "win", "improvement")])
def test_a_campaign_and_an_ab_with_the_same_gains_get_the_same_answer(combine: object, cell: str, arm: str) -> None:
    """A config better on chat and worse on long, beyond the noise on each: the same call from either kind."""
    shapes = {
        "workloads": {"chat": {"input_len": 128, "output_len": 16}, "long": {"input_len": 1024, "output_len": 16}}
    }
    c = campaign(combine=combine, workload=None, **shapes)
    cells = [
        _on_both(verdict("base", {1: 100.0, 8: 100.0}), verdict("base", {1: 100.0, 8: 100.0})),
        _on_both(verdict("a", {1: 100.0, 8: 112.0}), verdict("a", {1: 100.0, 8: 90.0})),
    ]
    report = select(c, ["base", "a"], "base", {v.cell: v for v in cells})
    a = next(r for r in report.ranked if r.cell == "a")
    assert a.outcome == cell
    ab = across_workloads([on("chat", BETTER), on("long", WORSE)], combine)  # type: ignore[arg-type]
    cand = next(x for x in ab.arms if x.arm == "cand")
    assert cand.outcome == arm
    assert (report.champion == "a") is (ab.champion == "cand") is (cell == "win")


def _on_both(chat, long):  # type: ignore[no-untyped-def]
    """One cell's verdict with its figures on two named workloads."""
    results = [r.model_copy(update={"workload": "chat"}) for r in chat.results]
    results += [r.model_copy(update={"workload": "long"}) for r in long.results]
    named = {w: Workload(name=w, input_len=n, output_len=16) for w, n in (("chat", 128), ("long", 1024))}
    return chat.model_copy(update={"results": results, "workloads": named})
