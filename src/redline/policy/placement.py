"""Where an observed boot goes: the rung the ladder expects next, or a replay of a past one with its config."""

from dataclasses import dataclass

from redline.errors import LadderError
from redline.models import ServeConfig
from redline.models.ladder import Climb, Ladder, Prediction
from redline.policy.route import next_step
from redline.policy.rungs import num


@dataclass(frozen=True)
class Placement:
    """Where an observed boot goes: the rung the ladder expects next, or a replay of a past one."""

    serve: ServeConfig
    climbs: Climb
    replay_of: int | None
    predicted: Prediction | None = None  # the memory model's, for a rung the route proposed with one


def place_boot(ladder: Ladder, max_model_len: int | None, max_num_batched_tokens: int | None) -> Placement:
    """The rung a boot of (max_model_len, max_num_batched_tokens) records, or a LadderError naming both."""
    step = next_step(ladder)
    booted = (max_model_len, max_num_batched_tokens)
    expected = None if step.rung is None else (step.rung.max_model_len, step.rung.max_num_batched_tokens)
    if step.route == "run_rung" and step.rung is not None and expected == booted:
        return Placement(step.rung, step.climbs or "floor", step.replay_of, step.predicted)
    past = [r for r in ladder.rungs if r.config == booted]
    if past:
        original = ([r for r in past if r.replay_of is None] or past)[-1]
        return Placement(original.serve, original.climbs, original.index)
    wanted = (
        f"rung {len(ladder.rungs) + 1} at max_model_len {num(expected[0])}, max_num_batched_tokens {num(expected[1])}"
        if step.route == "run_rung" and expected
        else f"{step.route.replace('_', ' ')}, not a boot"
    )
    raise LadderError(
        f"the log booted max_model_len {num(max_model_len)}, max_num_batched_tokens {num(max_num_batched_tokens)}, "
        f"but the ladder expects {wanted} ({step.reason}) and no past rung used that config: "
        "boot what `redline ladder next` says, or replay a past rung exactly"
    )
