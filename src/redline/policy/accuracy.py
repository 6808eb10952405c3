"""The accuracy gate, decided: an arm that turns on a lever risking the model's answers (policy/quality_risk.py) is
set against the baseline arm on the fixed prompt set both answered greedily through their servers' own API. A
consistency check against the baseline arm, not a benchmark score.

    gate = gate_of("fp8", "auto", ["kv_cache_dtype fp8"], baseline_answers, arm_answers)
    gate.status          # "pass" only when every figure holds its threshold (below, in one place)
    missing = gate_missing(["kv_cache_dtype fp8"], gate)   # what a close or a write-back still needs, or None

The figures, over the prompts in order: the share whose generated tokens are the baseline's exactly; the mean share
of each answer's tokens that match before the first mismatch; the mean absolute difference of the chosen tokens'
log-probabilities on that common prefix (natural log). A few late mismatches pass (a near-tie flipped by rounding
is expected of a lower precision); answers that part early or drift in confidence do not.

An arm or baseline booted on dummy weights (load_format dummy: random values, no checkpoint read) is never a pass
nor a fail: its figures are kept, but they compare the numerics of random weights, whose logits nearly tie (every
chosen token's log-probability about -ln(vocabulary)), and say nothing of the model's answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from redline.errors import InputError
from redline.models.accuracy import AccuracyGate, Answer, Answers, PromptSet
from redline.untrusted import load_json
from redline.validation_text import explain_line

EXACT_MIN = 0.75  # at least 3 prompts in 4 answered token for token as the baseline does
PREFIX_MIN = 0.90  # on average, 90% of each answer matches before its first mismatch
LOGPROB_MAX = 0.10  # nats: the chosen tokens' mean |log-probability difference| on the common prefix
THRESHOLDS = f"exact >= {EXACT_MIN:.0%}, prefix >= {PREFIX_MIN:.0%}, |dlogprob| <= {LOGPROB_MAX} nats"
ANSWERS_FILE = "accuracy.json"
DUMMY_SAID = (
    "dummy weights (load_format dummy) in this A/B: these figures compare random weights' numerics and say nothing "
    "of the model's answers; boot both arms on the real checkpoint and run ab_run again for a pass"
)


def answers_of(text: str, prompts: PromptSet, source: str = "the server's answer") -> Answers:
    """The answers an OpenAI-style completions response (one choice per prompt, logprobs asked) holds, or an
    Answers whose error says, in one line naming `source`, why it holds none (not JSON, nested past the parser, a
    choice without its tokens' log-probabilities, a figure no log-probability can be)."""
    empty = Answers(prompt_set=prompts.version, max_tokens=prompts.max_tokens)
    try:
        choices = sorted(load_json(text, source)["choices"], key=lambda c: int(c["index"]))
        answers = [_answer(c) for c in choices]
    except InputError as exc:
        return empty.model_copy(update={"error": str(exc)[:300]})
    except ValidationError as exc:
        why = f"{source} is not a completions response with log-probabilities ({explain_line(exc)})"
        return empty.model_copy(update={"error": why[:300]})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        why = f"{source} is not a completions response with log-probabilities ({type(exc).__name__}: {exc})"
        return empty.model_copy(update={"error": " ".join(why.split())[:300]})
    if len(answers) != len(prompts.prompts):
        why = f"the server answered {len(answers)} of {len(prompts.prompts)} prompts"
        return empty.model_copy(update={"error": why})
    return empty.model_copy(update={"answers": answers})


def _answer(choice: dict[str, Any]) -> Answer:
    logprobs = choice["logprobs"]
    tokens, values = logprobs["tokens"], logprobs["token_logprobs"]
    if not isinstance(tokens, list) or not all(isinstance(t, str | int) and not isinstance(t, bool) for t in tokens):
        raise TypeError("logprobs.tokens must be a list of tokens")
    if not isinstance(values, list) or len(values) != len(tokens):
        raise TypeError("logprobs.token_logprobs must hold one log-probability per token")
    return Answer(tokens=[str(t) for t in tokens], logprobs=values)


def _prefix(a: Answer, b: Answer) -> int:
    n = 0
    for x, y in zip(a.tokens, b.tokens, strict=False):
        if x != y:
            break
        n += 1
    return n


def figures(baseline: Sequence[Answer], arm: Sequence[Answer]) -> tuple[float, float, float | None]:
    """(exact share, mean prefix share, mean |logprob difference| on the common prefixes: None with none)."""
    pairs = list(zip(baseline, arm, strict=True))
    exact = sum(b.tokens == a.tokens for b, a in pairs) / len(pairs)
    prefix = sum(_prefix(b, a) / max(len(b.tokens), len(a.tokens), 1) for b, a in pairs) / len(pairs)
    deltas = [
        abs(x - y)
        for b, a in pairs
        for x, y in zip(b.logprobs[: _prefix(b, a)], a.logprobs[: _prefix(b, a)], strict=False)
        if x is not None and y is not None
    ]
    return exact, prefix, (sum(deltas) / len(deltas) if deltas else None)


def gate_of(
    arm: str,
    baseline: str,
    risks: list[str],
    base_answers: Answers | None,
    arm_answers: Answers | None,
    *,
    dummy_weights: bool = False,
) -> AccuracyGate:
    """The gate of `arm` (which turns on `risks`) against `baseline`, from the answers each recorded (None: none);
    `dummy_weights`: either booted on random weights (load_format dummy), so its figures prove nothing."""
    gate = AccuracyGate(arm=arm, baseline=baseline, status="not_run", risks=risks, why="")
    cannot = _cannot_compare(baseline, base_answers, arm_answers)
    if cannot is not None:
        status, why = cannot
        return gate.model_copy(update={"status": status, "why": why})
    assert base_answers is not None and arm_answers is not None
    exact, prefix, delta = figures(base_answers.answers, arm_answers.answers)
    # no log-probability on the common prefix (an arm, or a baseline, that returned none) is not a test met
    held = exact >= EXACT_MIN and prefix >= PREFIX_MIN and delta is not None and delta <= LOGPROB_MAX
    said = f"{delta:.4f} nats" if delta is not None else "none (no log-probabilities on a common prefix)"
    status = "dummy_weights" if dummy_weights else "pass" if held else "fail"
    why = (
        f"against {baseline!r} on {len(arm_answers.answers)} prompts x {arm_answers.max_tokens} tokens: "
        f"exact {exact:.0%}, prefix {prefix:.0%}, |dlogprob| {said} ({THRESHOLDS})"
    )
    why = f"{DUMMY_SAID}; {why}" if dummy_weights else f"{status} {why}"
    return gate.model_copy(
        update={
            "status": status,
            "why": why,
            "exact_share": round(exact, 4),
            "prefix_share": round(prefix, 4),
            "logprob_delta": round(delta, 6) if delta is not None else None,
        }
    )


def _cannot_compare(baseline: str, base_answers: Answers | None, arm_answers: Answers | None) -> tuple[str, str] | None:
    """Why the two cannot be compared, as (status, why); None: they can."""
    if arm_answers is None:
        return "not_run", "the arm recorded no answers (a trial that benched in full asks them: run ab_run again)"
    if base_answers is None:
        return "not_run", f"the baseline {baseline!r} recorded no answers to compare with: run ab_run again"
    if base_answers.error is not None:
        return "not_run", f"the baseline {baseline!r} gave no usable answers: {base_answers.error}"
    if arm_answers.error is not None:
        return "fail", f"the arm gave no usable answers: {arm_answers.error}"
    same = (base_answers.prompt_set, base_answers.max_tokens, len(base_answers.answers))
    if same != (arm_answers.prompt_set, arm_answers.max_tokens, len(arm_answers.answers)):
        return "not_run", "the two arms answered different prompt sets: run both again"
    return None


def said_of(gate: AccuracyGate) -> str:
    """The gate's status in words, as a headline names it."""
    if gate.status == "dummy_weights":
        return "not judged: it ran on dummy weights"
    return gate.status.replace("_", " ")


def gate_missing(risks: list[str], gate: AccuracyGate | None) -> str | None:
    """What a champion that turns on `risks` still needs from the accuracy gate (None: nothing: no risk, or a pass)."""
    if not risks or (gate is not None and gate.status == "pass"):
        return None
    if gate is None:
        said = "it has not run"
    else:
        said = gate.why if gate.status == "dummy_weights" else f"it is {said_of(gate)}: {gate.why}"
    return (
        f"an accuracy gate's pass, as it turns on {', '.join(risks)}: {said} (ab_run against the baseline arm runs it)"
    )


__all__ = [
    "ANSWERS_FILE",
    "DUMMY_SAID",
    "EXACT_MIN",
    "LOGPROB_MAX",
    "PREFIX_MIN",
    "THRESHOLDS",
    "answers_of",
    "figures",
    "gate_missing",
    "gate_of",
    "said_of",
]
