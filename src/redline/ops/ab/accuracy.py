"""The accuracy gate at its edges: the packaged prompt set, each arm's answers asked through its own server's API,
kept beside the trial, and read back to be judged (policy/accuracy.py decides).

    then = ask_answers(session, config, write)            # a measured boot's `then`: after the benches, one ask
    gates = accuracy_gates(paths, spec, arms)              # the gate of every arm that risks the model's answers

Only an A/B whose arms differ from the baseline by a lever that can change the model's answers
(policy/quality_risk.py) asks; then every arm (the baseline too) answers once, on the first of its trials that
benched in full, and trials/<arm>-<k>/accuracy.json keeps the answers, so the gate is judged again from disk alone.
The ask goes where the server's metrics are read from (Target.http_text), so it works on every target kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from pydantic import ValidationError

from redline.errors import RedlineError
from redline.inputs import packaged_yaml, read_text
from redline.ledger.ab_file import AbPaths
from redline.models import ServeConfig
from redline.models.ab import AbSpec, ArmSummary
from redline.models.accuracy import AccuracyGate, Answers, PromptSet
from redline.models.serve import DUMMY
from redline.ops.measured_boot import BenchOutcome, Then
from redline.ops.session import ServeSession, say
from redline.policy.accuracy import ANSWERS_FILE, answers_of, gate_of
from redline.policy.quality_risk import quality_risks
from redline.targets import ServerHandle

PROMPTS = "accuracy-prompts.yaml"
ASK_TIMEOUT_S = 600.0  # one request for every prompt: a slow host's first request pays its warm-up too


@cache
def prompt_set() -> PromptSet:
    """The fixed prompt set redline ships (src/redline/data/accuracy-prompts.yaml)."""
    return packaged_yaml(PROMPTS, PromptSet)


def gate_needed(serves: dict[str, ServeConfig], baseline: str | None) -> bool:
    """Whether any arm turns on a lever risking the model's answers that the baseline arm does not (no baseline named:
    nothing to check against)."""
    base = serves.get(baseline) if baseline is not None else None
    return base is not None and any(quality_risks(serve, base) for name, serve in serves.items() if name != baseline)


async def ask(session: ServeSession, handle: ServerHandle, config: ServeConfig) -> Answers:
    """The running server's greedy answers to the prompt set, through its own completions API."""
    prompts = prompt_set()
    url, body = session.engine.completions_request(config, prompts.prompts, prompts.max_tokens)
    text = await session.target.http_text(handle, url, body=body, timeout_s=ASK_TIMEOUT_S)
    if text is None:
        why = f"the server did not answer 200 to a POST of {url} within {ASK_TIMEOUT_S:.0f}s"
        return Answers(prompt_set=prompts.version, max_tokens=prompts.max_tokens, error=why)
    return answers_of(text, prompts, f"the answer to POST {url}")


def ask_answers(session: ServeSession, config: ServeConfig, write: Callable[[str, str], object]) -> Then:
    """The measured boot's `then`: the answers asked once the benches ran, kept as accuracy.json; no bench added."""

    async def then(handle: ServerHandle, done: list[BenchOutcome]) -> list[BenchOutcome]:
        await say(session.progress, 0.97, "accuracy gate: the fixed prompt set, greedily, with log-probabilities")
        write(ANSWERS_FILE, (await ask(session, handle, config)).model_dump_json(indent=1))
        return []

    return then


def answered(paths: AbPaths, arm: str, trials: int) -> Answers | None:
    """The answers the arm's first trial with an accuracy.json kept; None: none did."""
    for k in range(1, trials + 1):
        path = paths.trial_dir(arm, k) / ANSWERS_FILE
        if not path.is_file():
            continue
        try:
            return Answers.model_validate_json(read_text(path, "a trial's accuracy answers"))
        except (RedlineError, ValidationError):
            continue  # unreadable: the next trial's, else none
    return None


def accuracy_gates(paths: AbPaths, spec: AbSpec, arms: Sequence[ArmSummary]) -> dict[str, AccuracyGate]:
    """The gate of each arm that turns on a lever risking the model's answers against the baseline arm, by arm."""
    base = next((a for a in arms if a.arm == spec.baseline), None)
    gates: dict[str, AccuracyGate] = {}
    if spec.baseline is None:
        return gates
    for arm in arms:
        risks = quality_risks(arm.serve, base.serve if base is not None else None) if arm.arm != spec.baseline else []
        if risks:
            mine, theirs = answered(paths, arm.arm, spec.trials), answered(paths, spec.baseline, spec.trials)
            dummy = DUMMY in (arm.serve.load_format, base.serve.load_format if base is not None else None)
            gates[arm.arm] = gate_of(arm.arm, spec.baseline, risks, theirs, mine, dummy_weights=dummy)
    return gates


__all__ = ["ASK_TIMEOUT_S", "PROMPTS", "accuracy_gates", "answered", "ask", "ask_answers", "gate_needed", "prompt_set"]
