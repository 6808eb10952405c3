"""The predict policy: from the floor's boot, one rung at the predicted whole ceiling, then its proof.

Once the floor has booted, the memory model predicts the KV cache at the target batched tokens (the floor's boot
is its anchor), and the joint ceiling is the largest max_model_len whose min_concurrency requests fit in the
band's low end of that cache, with max_num_batched_tokens at its target (the ladder's field, else the engine's
default chunk): both knobs in one rung (ops/ladder/joint.py writes it into the ladder as `joint`, once).

    floor boot -> joint rung -> smoke test -> record        (two boots, one smoke test)

The joint rung's own boot is exact where the prediction was not: if its cache holds fewer requests than asked,
the rung it says fits is tried once; if it holds more than 1% of context beyond, that rung is climbed once more
(and smoke-tested). Any other failure (a crash, an OOM in the profile run, a failed smoke test) falls back to the
signal policy's climb, one knob at a time from the floor, as the redline workflow asks.
"""

from __future__ import annotations

from redline.engines import get_engine
from redline.models.ladder import JointPlan, Ladder, NextStep, Prediction, Rung
from redline.models.memory import MemoryPrediction
from redline.policy import compile_proof, signal, steps
from redline.policy.rungs import JOINT, is_bad, is_good, knobs, mml_cap, mnbt_cap, seen

MAX_JOINT = 3  # joint rungs before the climb falls back to one knob at a time
HEADROOM = 0.01  # context a proven joint rung must leave unused before one more is worth its boot


def fitting(ladder: Ladder, rung: Rung) -> int | None:
    """The longest max_model_len of which min_concurrency requests fit the cache the rung reported (less the tokens
    the engine keeps back, as the plan's prediction says: a failed boot's own estimate already leaves them out)."""
    reserved = ladder.joint.predicted.reserved_tokens if ladder.joint and rung.status.booted else 0
    fit = signal.fits(rung, ladder.min_concurrency)
    if fit is None:
        return None
    fit -= reserved // ladder.min_concurrency + (1 if reserved % ladder.min_concurrency else 0)
    cap = mml_cap(ladder)
    return signal.round_down(min(fit, cap) if cap else fit, ladder.kv_block_size)


def target_batched_tokens(ladder: Ladder) -> int:
    """The batched tokens the joint ceiling keeps: the ladder's target, else the engine's default chunk (never
    below the floor's)."""
    target = ladder.target_max_num_batched_tokens or get_engine(ladder.engine).default_chunk
    return max(target, ladder.floor.max_num_batched_tokens)


def plan(ladder: Ladder, prediction: MemoryPrediction) -> JointPlan | None:
    """The joint ceiling the prediction (at the target batched tokens) allows: min_concurrency requests of the
    largest block-rounded max_model_len in the band's low end; None when that is not above the floor."""
    c, low = ladder.min_concurrency, prediction.kv_cache_tokens_low - prediction.reserved_tokens
    cap = mml_cap(ladder)
    mml = signal.round_down(min(low // c, cap) if cap else low // c, ladder.kv_block_size)
    if mml <= ladder.floor.max_model_len:
        return None
    mnbt = min(prediction.serve.max_num_batched_tokens or target_batched_tokens(ladder), mnbt_cap(ladder, mml))
    # memory_predict's answer, its max_concurrency said at the planned max_model_len (one figure everywhere)
    held = get_engine(ladder.engine).memory_model().concurrency(prediction.kv_cache_tokens, mml, prediction.gpu)
    predicted = Prediction.of(prediction, max_concurrency=held)
    bound = "the model's positions" if cap and mml == signal.round_down(cap, ladder.kv_block_size) else "the cache"
    state = prediction.compile_cache
    cache = f" on a {state} torch.compile cache" if state in ("cold", "warm") else ""
    reason = (
        f"the memory model predicts {prediction.kv_cache_tokens:,} KV tokens ({prediction.kv_cache_tokens_low:,} to "
        f"{prediction.kv_cache_tokens_high:,}) at max_num_batched_tokens {mnbt:,}{cache}, so {c} request(s) of "
        f"max_model_len {mml:,} fit ({bound} binds)"
    )
    return JointPlan(max_model_len=mml, max_num_batched_tokens=mnbt, predicted=predicted, reason=reason)


def _first(ladder: Ladder) -> NextStep:
    plan = ladder.joint
    assert plan is not None
    return steps.run_rung(
        ladder,
        plan.max_model_len,
        plan.max_num_batched_tokens,
        JOINT,
        f"the floor booted; {plan.reason}: boot the whole ceiling at once",
        predicted=plan.predicted,
    )


def _after_good(ladder: Ladder, last: Rung, joints: list[Rung], why: str) -> NextStep:
    if not last.smoke_test.attempted:
        return steps.smoke(ladder, last, f"{why}: smoke-test it at near-max length, the joint ceiling's proof")
    refuted = [r.serve.max_model_len for r in joints if is_bad(r, ladder.min_concurrency)]
    fit = min([fitting(ladder, last) or 0, *(m - ladder.kv_block_size for m in refuted)])  # never a refuted one
    mnbt = last.serve.max_num_batched_tokens or ladder.floor.max_num_batched_tokens
    if fit > last.serve.max_model_len * (1 + HEADROOM) and len(joints) < MAX_JOINT:
        return steps.run_rung(
            ladder, fit, mnbt, JOINT, f"{why}, passed its smoke test, and its cache holds max_model_len {fit:,}: climb"
        )
    return compile_proof.record(
        ladder, last, f"{why}, passed its smoke test: record it as the ceiling (both knobs at once)"
    )


def step(ladder: Ladder, view: list[Rung]) -> NextStep | None:
    """The joint climb's next step; None when it has none to give (no plan, a bad floor, or a joint rung that
    failed otherwise than by its size): the signal policy's climb goes on from the floor."""
    floor, c = view[0], ladder.min_concurrency
    if ladder.joint is None or not is_good(floor, c) or any(r.climbs not in ("floor", JOINT) for r in view):
        return None
    joints = [r for r in view if r.climbs == JOINT]
    if not joints:
        return _first(ladder)
    last = joints[-1]
    why = f"joint rung {last.index} ({knobs(last)}) {seen(last)}"
    if is_good(last, c):
        return _after_good(ladder, last, joints, why)
    if is_bad(last, c) and not last.smoke_test.failed and len(joints) < MAX_JOINT:
        fit = fitting(ladder, last)
        if fit is not None and fit > floor.serve.max_model_len:
            mnbt = last.serve.max_num_batched_tokens or ladder.floor.max_num_batched_tokens
            return steps.run_rung(
                ladder, fit, mnbt, JOINT, f"{why}, fewer than {c} requests: try {fit:,}, what it says fits"
            )
    return None


__all__ = ["fitting", "plan", "step", "target_batched_tokens"]
