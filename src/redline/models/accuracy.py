"""The accuracy gate's shapes: the fixed prompt set, one arm's answers to it (trials/<arm>-<k>/accuracy.json), and
the gate's outcome for an arm against the baseline arm (policy/accuracy.py judges it).

A consistency check against the baseline arm, not a benchmark score: it says whether an arm answers as its baseline
does, never how well either answers.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from redline.models.strict import Strict

LogProb = Annotated[float, Field(le=0, ge=-1e6, allow_inf_nan=False)]  # a chosen token's: never NaN, never over 0


class PromptSet(Strict):
    """src/redline/data/accuracy-prompts.yaml: what every arm is asked, greedily, for max_tokens tokens."""

    schema_version: Literal[1] = 1
    version: int = Field(description="the set's version: answers to another version are never compared")
    max_tokens: int = Field(gt=0, le=256, description="tokens generated per prompt")
    prompts: list[str] = Field(min_length=1, max_length=128)


class Answer(Strict):
    """One prompt's greedy answer: its tokens as the server named them and each one's log-probability."""

    tokens: list[Annotated[str, Field(max_length=256)]] = Field(
        max_length=4096, description="the generated tokens, as the server returned them (ids where it can)"
    )
    logprobs: list[LogProb | None] = Field(
        max_length=4096, description="each chosen token's log-probability (natural log)"
    )


class Answers(Strict):
    """An arm's answers to the prompt set, asked once on a booted server after its benches (accuracy.json)."""

    schema_version: Literal[1] = 1
    prompt_set: int = Field(description="the prompt set's version")
    max_tokens: int
    answers: list[Answer] = Field([], description="one per prompt, in the set's order; empty when the ask failed")
    error: str | None = Field(None, description="why the server gave no usable answers (the gate then fails)")


GateStatus = Literal["pass", "fail", "not_run", "dummy_weights"]
LABEL = "consistency check against the baseline arm, not a benchmark score"


class AccuracyGate(Strict):
    """One arm's accuracy gate against the baseline arm: a consistency check, not a benchmark score."""

    arm: str
    baseline: str
    status: GateStatus
    risks: list[str] = Field(description="the levers the arm turns on that the baseline does not (policy/quality_risk)")
    why: str = Field(description="the outcome in words: each figure against its threshold, or why the gate did not run")
    exact_share: float | None = Field(None, description="the share of prompts whose tokens match the baseline's")
    prefix_share: float | None = Field(
        None, description="the mean share of each answer's tokens that match the baseline's before the first mismatch"
    )
    logprob_delta: float | None = Field(
        None, description="the mean absolute difference of the chosen tokens' log-probabilities on the common prefix"
    )
    label: str = Field(LABEL, description="what the gate is: a consistency check against the baseline arm")


__all__ = ["LABEL", "AccuracyGate", "Answer", "Answers", "GateStatus", "PromptSet"]
