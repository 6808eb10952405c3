"""The lever frontier's decisions (policy/frontier.py): which levers an arm tried against its baseline, the frontier
after a run (a judged lever leaves the untried list, a draft's stays), and what it says next."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from redline.models import ServeConfig
from redline.models.frontier import Frontier, TriedLever
from redline.models.lever import Lever
from redline.policy.frontier import covers, levers_tried, open_levers, said_next, under_of, updated

BASE = ServeConfig(model="/m", max_model_len=4096, max_num_batched_tokens=2048)
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def lever(name: str, score: float) -> Lever:
    return Lever(
        lever=name,
        change=f"set {name}",
        expected_gain_pct=score,
        expected="a prediction",
        cost="low",
        cost_boots=6,
        score=score,
        gate=f"ab_run of {name}",
    )


def tried(name: str, outcome: str, run: str = "ab/x.yml, arm b") -> TriedLever:
    return TriedLever(lever=name, change="c", run=run, outcome=outcome, why="w", at=NOW)  # type: ignore[arg-type]


def test_each_knob_that_changed_is_the_lever_it_tries() -> None:
    arm = BASE.model_copy(
        update={"max_num_batched_tokens": 8192, "kv_cache_dtype": "fp8", "enforce_eager": True, "port": 9}
    )
    assert levers_tried(BASE, arm) == [
        ("cuda_graphs", "enforce_eager False -> True"),
        ("fp8_kv_cache", "kv_cache_dtype None -> fp8"),
        ("max_num_batched_tokens", "max_num_batched_tokens 2048 -> 8192"),
    ]  # the port is where it listens, not a lever
    spec = BASE.model_copy(update={"extra_flags": ['--speculative-config={"method": "ngram"}']})
    assert [name for name, _ in levers_tried(BASE, spec)] == ["speculative_decoding"]
    fp8 = BASE.model_copy(update={"model": "/m-FP8"})  # another checkpoint of the model: the fp8 weights lever
    assert levers_tried(BASE, fp8) == [("fp8_weights", "model /m -> /m-FP8")]
    assert levers_tried(BASE, BASE) == []


def test_a_judged_lever_leaves_the_untried_list_and_a_drafts_stays() -> None:
    start = Frontier(model="/m", hardware="cpu", engine="vllm", engine_version="0.32.0", updated_at=NOW)
    after = updated(
        start,
        [tried("bigger_batch", "no_improvement"), tried("cuda_graphs", "draft")],
        [lever("bigger_batch", 9), lever("cuda_graphs", 5), lever("fp8_kv_cache", 7)],
        NOW,
    )
    assert [v.lever for v in after.untried] == ["fp8_kv_cache", "cuda_graphs"]  # best score first
    predicted = [lever("bigger_batch", 9), lever("cuda_graphs", 5)]  # what a run's prediction would propose again
    assert [v.lever for v in open_levers(predicted, after)] == ["cuda_graphs"]  # a draft's lever is still open
    assert open_levers(predicted, None) == predicted
    again = updated(after, [tried("cuda_graphs", "improvement")], [], NOW)  # the same run again: its entry replaced
    assert [(t.lever, t.outcome) for t in again.tried] == [
        ("bigger_batch", "no_improvement"),
        ("cuda_graphs", "improvement"),
    ]
    assert [v.lever for v in again.untried] == ["fp8_kv_cache"]
    assert said_next(again).startswith("/m: try fp8_kv_cache (set fp8_kv_cache; ab_run of fp8_kv_cache)")


def test_nothing_left_is_said_only_with_an_empty_untried_list_and_what_emptied_it() -> None:
    done = Frontier(
        model="/m",
        hardware="cpu",
        engine="vllm",
        engine_version="0.32.0",
        tried=[tried("bigger_batch", "improvement"), tried("fp8_kv_cache", "regression")],
        updated_at=NOW,
    )
    said = said_next(done)
    assert said.startswith("/m: nothing left on the frontier: won bigger_batch; refuted fp8_kv_cache (regression: w)")


EAGER_128 = under_of("eager", [16, 128], 4352)  # where the H200 refuted fp8 KV (tests/data/vllm-0.26.0-h200-ab-fp8kv)


@pytest.mark.parametrize(
    ("now", "proposed"),
    [
        (under_of("eager", [1, 64], 576), False),  # inside where it lost: not again
        (under_of("eager", [128], 4352), False),
        (under_of("graphs", [128], 4352), True),  # another regime
        (under_of("eager", [256], 4352), True),  # a higher concurrency than it was tried at
        (under_of("eager", [64], 32768), True),  # longer requests: the KV cache may bind where it did not
        (None, False),  # a run that says nothing of where it is
    ],
)
def test_a_refuted_lever_is_proposed_again_only_beyond_where_it_was_refuted(now: object, proposed: bool) -> None:
    refuted = tried("fp8_kv_cache", "no_improvement").model_copy(update={"under": EAGER_128})
    frontier = Frontier(model="/m", hardware="h200-sxm", engine="vllm", engine_version="0.26.0", updated_at=NOW)
    frontier = updated(frontier, [refuted], [lever("fp8_kv_cache", 34), lever("cuda_graphs", 15)], NOW, EAGER_128)
    assert [v.lever for v in frontier.untried] == ["cuda_graphs"]  # where this run was, it is judged
    predicted = [lever("fp8_kv_cache", 34), lever("cuda_graphs", 15)]
    assert ("fp8_kv_cache" in [v.lever for v in open_levers(predicted, frontier, now)]) is proposed  # type: ignore[arg-type]
    assert covers(refuted, now) is not proposed  # type: ignore[arg-type]
    older = refuted.model_copy(update={"under": None})  # recorded before where was kept: taken as everywhere
    assert covers(older, now)  # type: ignore[arg-type]
