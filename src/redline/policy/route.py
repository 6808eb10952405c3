"""The route: what a ladder needs next, as a pure function of its rungs.

- no rung                          -> run the floor
- last rung booted, no smoke test  -> smoke test (doubling: always; signal: only
                                      at the predicted ceiling, else climb on)
- booted and smoke-tested          -> climb the phase's knob, or end the phase
- context failure (oom_*), or a    -> max_model_len, signal: try what the log says
  boot holding fewer than             fits, once; otherwise (and doubling, and
  min_concurrency requests            batched tokens) the phase ends at the best
                                      good rung below
- any other failure                -> diagnose; never retried blindly
- smoke test failed                -> record the best lower rung that passed its
                                      smoke test as the ceiling (else diagnose):
                                      boot signals did not predict load here, so
                                      climbing batched tokens on top is unsafe
- replay of rung N on request      -> run rung N's exact config again

One knob at a time: max_model_len with batched tokens at the floor, then, once
that ceiling is smoke-tested, max_num_batched_tokens at that max_model_len.
A ceiling is always a rung that booted and passed a smoke test; a good rung
that was never smoke-tested is replayed to be. A replay is evidence: one that
re-runs the last climbed rung stands in its place (a fix after a diagnosis);
any other is verified (booted and smoke-tested) and the climb goes on.

An engine whose boot proves no size (`Engine.pool_bounds_context`: SGLang boots at a
context its KV pool cannot hold, and profiles no prefill chunk) climbs the same route,
with two differences read from that fact, never from the engine's name: its pool's
tokens are only the max_model_len candidate, and the smoke test that confirms it sends
requests filling the context to within 0.1% (not 1%); and every booted batched-tokens
rung is smoke-tested before the climb goes on.
"""

from redline.engines import get_engine
from redline.errors import LadderError
from redline.models.ladder import Ladder, NextStep, Rung
from redline.policy import compile_proof, doubling, joint, signal, steps
from redline.policy.rungs import (
    JOINT,
    MML,
    MNBT,
    Phase,
    climb_view,
    is_bad,
    is_good,
    knobs,
    mml_cap,
    mnbt_cap,
    phase_of,
    proof,
    seen,
)

# predict: a joint rung at the predicted whole ceiling first (policy/joint.py), then, if it fails, the signal climb
POLICIES = {"predict": signal, "signal": signal, "doubling": doubling}


def _clamp(raw: int | None, above: int, below: int | None) -> int | None:
    if raw is None or raw <= above or (below is not None and raw >= below):
        return None
    return raw


def _propose(ladder: Ladder, phase: Phase, last: Rung) -> int | None:
    """The policy's next value for the phase's knob from a good rung, kept between what is known good and bad."""
    policy, c, block = POLICIES[ladder.policy], ladder.min_concurrency, ladder.kv_block_size
    if phase.variable == MML:
        raw = policy.next_max_model_len(last, min_concurrency=c, block=block, cap=mml_cap(ladder))
    else:
        earlier = [r for r in phase.line if is_good(r, c) and r.index != last.index]
        raw = policy.next_max_num_batched_tokens(
            last, earlier, min_concurrency=c, block=block, cap=mnbt_cap(ladder, last.serve.max_model_len)
        )
    best = phase.best_good(c)
    return _clamp(raw, max(phase.value(last), phase.value(best) if best else 0), phase.lowest_bad(c))


def _climb_to(ladder: Ladder, phase: Phase, last: Rung, target: int, why: str) -> NextStep:
    if phase.variable == MML:
        return steps.run_rung(ladder, target, ladder.floor.max_num_batched_tokens, MML, why)
    return steps.run_rung(ladder, last.serve.max_model_len, target, MNBT, why)


def _first_batched(ladder: Ladder, base: Rung, why: str) -> NextStep | None:
    """The first max_num_batched_tokens rung, from the smoke-tested max_model_len ceiling."""
    policy, mml = POLICIES[ladder.policy], base.serve.max_model_len
    raw = policy.next_max_num_batched_tokens(
        base, [], min_concurrency=ladder.min_concurrency, block=ladder.kv_block_size, cap=mnbt_cap(ladder, mml)
    )
    target = _clamp(raw, base.serve.max_num_batched_tokens or 0, None)
    if target is None:
        return None
    return steps.run_rung(
        ladder,
        mml,
        target,
        MNBT,
        f"{why}; max_model_len {mml:,} is smoke-tested (rung {base.index}): "
        f"now climb max_num_batched_tokens to {target:,} at max_model_len {mml:,}",
    )


def _end_phase(ladder: Ladder, phase: Phase, why: str) -> NextStep:
    c = ladder.min_concurrency
    best = phase.best_good(c)
    if best is None:
        # The last log's own words: a share-of-memory failure (SGLang's mem_fraction_static) needs more memory,
        # which no lower floor gives.
        said = f" (the last log: {phase.line[-1].reason[:300]})" if phase.line else ""
        return steps.diagnose(
            None,
            f"{why}; no rung on the {phase.variable} climb booted holding {c} max-length "
            f"request(s){said}: lower the floor, or give the engine the memory its log asks "
            "for, and start a new ladder",
        )
    if not proof(ladder, best):
        return steps.replay(
            best,
            f"{why}; the ceiling is rung {best.index} ({knobs(best)}), never smoke-tested: replay it and smoke-test it",
        )
    if phase.variable == MML and (step := _first_batched(ladder, best, why)):
        return step
    named = "it" if best.index == phase.line[-1].index else f"rung {best.index} ({knobs(best)})"
    return compile_proof.record(ladder, best, f"{why}: record {named} as the ceiling")


def _after_bad(ladder: Ladder, phase: Phase, last: Rung, view: list[Rung]) -> NextStep:
    c, policy = ladder.min_concurrency, POLICIES[ladder.policy]
    why = f"rung {last.index} ({knobs(last)}) {seen(last)}"
    if last.status.booted:
        why += f", fewer than {c} request(s) of {last.serve.max_model_len:,}"
    previous = phase.before(last, view)
    if phase.variable == MML and not (previous is not None and is_bad(previous, c)):
        raw = policy.retry_max_model_len(last, min_concurrency=c, block=ladder.kv_block_size, cap=mml_cap(ladder))
        best = phase.best_good(c)
        target = _clamp(raw, phase.value(best) if best else 0, phase.lowest_bad(c))
        if target is not None:
            return _climb_to(
                ladder, phase, last, target, f"{why}: try max_model_len {target:,}, what it says fits, once"
            )
    return _end_phase(ladder, phase, why)


def _after_smoke_failure(ladder: Ladder, phase: Phase, last: Rung) -> NextStep:
    why = f"rung {last.index} ({knobs(last)}) booted but failed its smoke test ({last.smoke_test.reason})"
    lower = [
        r
        for r in phase.latest().values()
        if phase.value(r) < phase.value(last) and is_good(r, ladder.min_concurrency) and proof(ladder, r)
    ]
    if not lower:
        return steps.diagnose(last, f"{why}, and no lower rung passed one: find out why the server fails under load")
    best = max(lower, key=phase.value)
    return compile_proof.record(
        ladder,
        best,
        f"{why}: the ceiling is rung {best.index} ({knobs(best)}), the best lower rung that passed its smoke test",
    )


def _climb(ladder: Ladder, view: list[Rung]) -> NextStep:
    last, policy = view[-1], POLICIES[ladder.policy]
    if not last.status.booted and not last.status.is_context_failure:
        return steps.diagnose(
            last,
            f"rung {last.index} ({knobs(last)}) ended {last.status.value}, which a smaller context "
            f"would not fix: {last.reason}. Diagnose and fix it, then replay rung {last.index}; "
            "never retry blindly",
        )
    phase = phase_of(ladder, view)
    if last.smoke_test.failed:
        return _after_smoke_failure(ladder, phase, last)
    if is_bad(last, ladder.min_concurrency):
        return _after_bad(ladder, phase, last, view)
    target = _propose(ladder, phase, last)
    why = f"rung {last.index} ({knobs(last)}) {seen(last)}"
    unproven = phase.bounded and phase.variable == MNBT  # the boot profiled no prefill chunk of this size
    if not last.smoke_test.attempted and (policy.SMOKE_EVERY_RUNG or unproven or target is None):
        return steps.smoke(
            ladder, last, f"{why}; {_why_smoke(ladder, phase, unproven)}: smoke-test it at near-max length"
        )
    if target is not None:
        pool = phase.bounded and phase.variable == MML
        said = ", its KV pool's tokens: a candidate only a smoke test confirms" if pool else ""
        return _climb_to(
            ladder,
            phase,
            last,
            target,
            f"{why}: the {ladder.policy} policy climbs {phase.variable} to {target:,}{said}",
        )
    return _end_phase(ladder, phase, f"{why}, passed its smoke test, and nothing higher is predicted to fit")


def _why_smoke(ladder: Ladder, phase: Phase, unproven: bool) -> str:
    title = get_engine(ladder.engine).title
    if POLICIES[ladder.policy].SMOKE_EVERY_RUNG:
        return "the doubling policy smoke-tests every rung before climbing"
    if unproven:
        return f"{title} profiles no prefill chunk at boot, so each batched-tokens rung is smoke-tested before the next"
    why = f"nothing higher is predicted to fit, so it is the candidate {phase.variable} ceiling"
    if phase.bounded and phase.variable == MML:
        why += f"; {title} boots at a context its KV pool cannot hold, so only this smoke test confirms it"
    return why


def _verify_replay(ladder: Ladder, last: Rung) -> NextStep | None:
    """A replay off the climb: it must reproduce its rung (and pass a smoke test if it booted)."""
    assert last.replay_of is not None  # next_step calls this only for a replay
    original = ladder.rungs[last.replay_of - 1]
    what = f"rung {last.index} replays rung {original.index} ({knobs(original)}, {original.status.value})"
    if not last.status.booted:
        if last.status == original.status:
            return None
        return steps.diagnose(
            last, f"{what} but ended {last.status.value}: {last.reason}. Find out what changed, then replay again"
        )
    if not last.smoke_test.attempted:
        return steps.smoke(ladder, last, f"{what} and booted: smoke-test it to verify")
    if last.smoke_test.failed:
        return steps.diagnose(
            last, f"{what}, booted, but failed its smoke test ({last.smoke_test.reason}): find out what changed"
        )
    return None


def next_step(ladder: Ladder, replay: int | None = None) -> NextStep:
    """What the ladder needs next, and why; `replay` asks for rung N's exact config again."""
    if replay is not None:
        if not 1 <= replay <= len(ladder.rungs):
            raise LadderError(f"there is no rung {replay} to replay: the ladder has rungs 1 to {len(ladder.rungs)}")
        original = ladder.rungs[replay - 1]
        return steps.replay(
            original, f"replay of rung {replay} ({knobs(original)}) on request: the same config, as a new rung"
        )
    if not ladder.rungs:
        f = ladder.floor
        return steps.run_rung(
            ladder,
            f.max_model_len,
            f.max_num_batched_tokens,
            "floor",
            f"no rung yet: boot the floor (max_model_len {f.max_model_len:,}, "
            f"max_num_batched_tokens {f.max_num_batched_tokens:,})",
        )
    view, last = climb_view(ladder.rungs), ladder.rungs[-1]
    if last.replay_of is not None and (ladder.ceiling is not None or last.index != view[-1].index):
        if step := _verify_replay(ladder, last):
            return step
    if ladder.ceiling is not None:
        c = ladder.ceiling
        proof_rung = ladder.rungs[c.proven_by[-1] - 1]
        return NextStep(
            route="done",
            rung=proof_rung.serve,
            rung_index=proof_rung.index,
            climbs=proof_rung.climbs,
            reason=f"the ceiling is recorded: max_model_len {c.max_model_len:,}, "
            f"max_num_batched_tokens {c.max_num_batched_tokens:,}",
        )
    return _climbing(ladder, view)


def _climbing(ladder: Ladder, view: list[Rung]) -> NextStep:
    """The climb's next step: a cold rung replayed warm where the deployment keeps its cache, the predict policy's
    joint climb, else one knob at a time."""
    if retry := compile_proof.warm_retry(ladder, view[-1]):
        return retry
    if ladder.policy == "predict":
        if step := joint.step(ladder, view):
            return step
        view = [r for r in view if r.climbs != JOINT]  # a failed joint climb: one knob at a time, from the floor
    return _climb(ladder, view)
