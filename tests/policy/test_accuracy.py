"""The accuracy gate, decided on hand-made answers (policy/accuracy.py): each figure against its stated threshold, what
cannot be compared, a completions response read, the prompt set shipped, and what a close still needs."""

from __future__ import annotations

import json

import pytest

from redline.engines import get_engine
from redline.models import ServeConfig
from redline.models.accuracy import Answer, Answers
from redline.ops.ab.accuracy import prompt_set
from redline.policy.accuracy import EXACT_MIN, LOGPROB_MAX, PREFIX_MIN, answers_of, figures, gate_missing, gate_of

RISK = ["kv_cache_dtype fp8"]


def answers(rows: list[list[str]], logprob: float = -1.0, **update: object) -> Answers:
    made = [Answer(tokens=r, logprobs=[logprob] * len(r)) for r in rows]
    return Answers(prompt_set=1, max_tokens=4, answers=made).model_copy(update=update)


BASE = [["a", "b", "c", "d"]] * 8


def test_the_shipped_prompt_set_is_short_and_varied() -> None:
    prompts = prompt_set()
    assert 16 <= len(prompts.prompts) <= 32 and prompts.max_tokens == 32
    assert len(set(prompts.prompts)) == len(prompts.prompts)


def test_the_same_answers_pass_and_the_gate_says_what_it_is() -> None:
    gate = gate_of("fp8", "auto", RISK, answers(BASE), answers(BASE))
    assert gate.status == "pass" and gate.exact_share == 1.0 and gate.prefix_share == 1.0 and gate.logprob_delta == 0
    assert gate.label == "consistency check against the baseline arm, not a benchmark score"
    assert gate.why.startswith("pass against 'auto' on 8 prompts x 4 tokens: exact 100%, prefix 100%")
    assert gate_missing(RISK, gate) is None


def test_a_late_flip_in_one_answer_passes_and_early_partings_fail() -> None:
    late = [*BASE[:7], ["a", "b", "c", "x"]]  # one near-tie flipped at the last token: 7 of 8 exact, 97% prefix
    gate = gate_of("fp8", "auto", RISK, answers(BASE), answers(late))
    assert gate.status == "pass" and gate.exact_share == 0.875 and gate.prefix_share == pytest.approx(0.96875, abs=1e-4)
    early = [*BASE[:5], *[["x", "b", "c", "d"]] * 3]  # 3 of 8 part at once: exact 62% < 75%
    gate = gate_of("fp8", "auto", RISK, answers(BASE), answers(early))
    assert gate.status == "fail" and gate.exact_share == 0.625 and f"exact >= {EXACT_MIN:.0%}" in gate.why
    assert "an accuracy gate's pass, as it turns on kv_cache_dtype fp8: it is fail" in (gate_missing(RISK, gate) or "")


def test_a_prefix_short_of_its_threshold_fails_even_with_enough_exact_answers() -> None:
    rows = [*BASE[:6], ["a", "x", "c", "d"], ["x", "b", "c", "d"]]  # 75% exact, prefix (6 + 0.25) / 8 = 78%
    exact, prefix, _ = figures(answers(BASE).answers, answers(rows).answers)
    assert exact == EXACT_MIN and prefix < PREFIX_MIN
    assert gate_of("a", "b", RISK, answers(BASE), answers(rows)).status == "fail"


def test_log_probabilities_that_drift_fail_though_every_token_agrees() -> None:
    gate = gate_of("fp8", "auto", RISK, answers(BASE, -1.0), answers(BASE, -1.0 - 2 * LOGPROB_MAX))
    assert gate.status == "fail" and gate.exact_share == 1.0 and gate.logprob_delta == pytest.approx(0.2)


def test_what_cannot_be_compared_is_not_run_and_an_arm_that_answered_nothing_fails() -> None:
    assert gate_of("fp8", "auto", RISK, answers(BASE), None).status == "not_run"
    gate = gate_of("fp8", "auto", RISK, None, answers(BASE))
    assert gate.status == "not_run" and "the baseline 'auto' recorded no answers" in gate.why
    assert gate_of("fp8", "auto", RISK, answers(BASE), answers(BASE, prompt_set=2)).status == "not_run"
    broken = Answers(prompt_set=1, max_tokens=4, error="the server did not answer 200")
    assert gate_of("fp8", "auto", RISK, answers(BASE), broken).status == "fail"
    assert gate_of("fp8", "auto", RISK, broken, answers(BASE)).status == "not_run"
    assert "it has not run" in (gate_missing(RISK, None) or "") and gate_missing([], None) is None


def test_a_completions_response_is_read_in_prompt_order_and_a_short_one_is_an_error() -> None:
    prompts = prompt_set()
    choices = [
        {"index": i, "text": "", "logprobs": {"tokens": [f"token_id:{i}"], "token_logprobs": [-0.5]}}
        for i in reversed(range(len(prompts.prompts)))
    ]
    read = answers_of(json.dumps({"choices": choices}), prompts)
    assert read.error is None and read.answers[0].tokens == ["token_id:0"] and read.answers[3].logprobs == [-0.5]
    assert read.prompt_set == prompts.version and read.max_tokens == prompts.max_tokens
    short = answers_of(json.dumps({"choices": choices[:3]}), prompts)
    assert short.answers == [] and short.error == f"the server answered 3 of {len(prompts.prompts)} prompts"
    assert (answers_of("<html>", prompts).error or "").startswith("the server's answer is not JSON")


def test_each_engine_asks_greedily_with_logprobs_and_vllm_names_its_tokens_by_id() -> None:
    config = ServeConfig(model="/models/tiny", max_model_len=1024, host="0.0.0.0", port=8011)
    url, body = get_engine("vllm").completions_request(config, ["hi"], 32)
    sent = json.loads(body)
    assert url == "http://127.0.0.1:8011/v1/completions"
    assert sent == {
        "model": "/models/tiny",
        "prompt": ["hi"],
        "max_tokens": 32,
        "temperature": 0,
        "logprobs": 1,
        "return_tokens_as_token_ids": True,
    }
    _, body = get_engine("sglang").completions_request(config, ["hi"], 32)
    assert "return_tokens_as_token_ids" not in json.loads(body) and json.loads(body)["temperature"] == 0


def _response(logprobs: object, n: int | None = None) -> str:
    """A completions response whose every choice carries `logprobs`."""
    count = len(prompt_set().prompts) if n is None else n
    return json.dumps({"choices": [{"index": i, "text": "", "logprobs": logprobs} for i in range(count)]})


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper than redline reads"),
        (_response(None), "not a completions response with log-probabilities (TypeError"),
        (_response({"tokens": ["a"]}), "not a completions response with log-probabilities (KeyError"),
        (_response({"tokens": [{"x": 1}], "token_logprobs": [-1.0]}), "logprobs.tokens must be a list of tokens"),
        (_response({"tokens": ["a", "b"], "token_logprobs": [-1.0]}), "one log-probability per token"),
        (_response({"tokens": ["a"], "token_logprobs": [float("nan")]}), "logprobs[0]: Input should be a finite"),
        (_response({"tokens": ["a"], "token_logprobs": [3.0]}), "logprobs[0]: Input should be less than or equal to 0"),
        ('{"choices": [{"index": "x"}]}', "(ValueError"),
    ],
    ids=["deep nest", "null logprobs", "no token_logprobs", "object token", "short", "NaN", "positive", "bad index"],
)
def test_accuracy_gate_untrusted_a_hostile_answer_is_one_line_naming_its_source(text: str, words: str) -> None:
    """Issue 32, item 8: whatever a server (or a neighbour on its port) answers, the gate reads it to an error of one
    line naming where it came from, and an arm with that error fails its gate."""
    read = answers_of(text, prompt_set(), "the answer to POST http://127.0.0.1:8000/v1/completions")
    error = read.error or ""
    assert read.answers == [] and error.startswith("the answer to POST http://127.0.0.1:8000/v1/completions ")
    assert words in error and "\n" not in error and len(error) <= 300, error
    assert gate_of("fp8", "auto", RISK, answers(BASE), read).status == "fail"


def test_accuracy_gate_untrusted_an_arm_without_log_probabilities_fails_the_log_probability_test() -> None:
    """The same tokens with no log-probability (the arm's, or the baseline's) never meet |dlogprob| by default."""
    tokens = [Answer(tokens=r, logprobs=[None] * len(r)) for r in BASE]
    bare = Answers(prompt_set=1, max_tokens=4, answers=tokens)
    for base, arm in ((answers(BASE), bare), (bare, answers(BASE)), (bare, bare)):
        gate = gate_of("fp8", "auto", RISK, base, arm)
        assert gate.status == "fail" and gate.exact_share == 1.0 and gate.logprob_delta is None
        assert "|dlogprob| none (no log-probabilities on a common prefix)" in gate.why
    read = answers_of(_response({"tokens": ["a"], "token_logprobs": [None]}), prompt_set())
    assert read.error is None and gate_of("fp8", "auto", RISK, read, read).status == "fail"
