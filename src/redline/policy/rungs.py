"""What a ladder's rungs say: their configs and caps, which are good or bad, what proves one, and the phase
(the knob being climbed) the climb is in. Pure functions; the route (policy/route.py) reads them."""

from dataclasses import dataclass

from redline.engines import get_engine
from redline.models import ServeConfig
from redline.models.ladder import Climb, Ladder, Rung, SmokeWorkload, Variable
from redline.policy import signal

MML: Variable = "max_model_len"
MNBT: Variable = "max_num_batched_tokens"
JOINT: Climb = "joint"


def num(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def knobs(rung: Rung) -> str:
    s = rung.serve
    return f"max_model_len {num(s.max_model_len)}, max_num_batched_tokens {num(s.max_num_batched_tokens)}"


def seen(rung: Rung) -> str:
    s = rung.signals
    if not rung.status.booted:
        fit = f"; it says max_model_len {num(s.estimated_max_model_len)} fits" if s.estimated_max_model_len else ""
        return f"failed {rung.status.value}{fit}"
    conc = f", {s.max_concurrency}x at {num(s.max_concurrency_tokens)}" if s.max_concurrency is not None else ""
    return f"booted with {num(signal.kv_tokens(rung))} KV tokens{conc}"


def serve_config(ladder: Ladder, max_model_len: int, max_num_batched_tokens: int) -> ServeConfig:
    return ServeConfig(
        model=ladder.model.path,
        max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens,
        **ladder.fixed.model_dump(),
    )


def smoke_workload(ladder: Ladder, rung: Rung) -> SmokeWorkload:
    """Requests as long as the rung allows, less a margin for the chat template, at the concurrency floor.

    Where the boot proved no context (a pool-bounded engine) the smoke test is the only proof, so its
    requests fill the context to within 0.1% rather than 1% (at least 64 tokens either way).
    """
    mml = rung.serve.max_model_len
    output = max(1, min(128, mml // 4))
    input_len = max(1, mml - output - max(64, mml // (1000 if pool_bounded(ladder) else 100)))
    c = ladder.min_concurrency
    return SmokeWorkload(input_len=input_len, output_len=output, concurrency=c, num_prompts=2 * c)


def mml_cap(ladder: Ladder) -> int | None:
    return None if ladder.allow_long_context else ladder.model.max_position_embeddings


def mnbt_cap(ladder: Ladder, max_model_len: int) -> int:
    # One prefill chunk larger than a full-length request buys a single-request ceiling nothing.
    return ladder.max_num_batched_tokens_cap or max_model_len


def pool_bounded(ladder: Ladder) -> bool:
    """Whether the ladder's engine boots at sizes its memory cannot serve (an engine fact, not its name)."""
    return get_engine(ladder.engine).pool_bounds_context


def is_good(rung: Rung, c: int) -> bool:
    """Booted, held `c` max-length requests, and did not fail a smoke test."""
    tokens = signal.kv_tokens(rung)
    holds = tokens is None or tokens >= c * rung.serve.max_model_len
    return rung.status.booted and holds and not rung.smoke_test.failed


def is_bad(rung: Rung, c: int) -> bool:
    """A context failure, or a boot whose KV cache holds fewer than `c` max-length requests."""
    tokens = signal.kv_tokens(rung)
    short = rung.status.booted and tokens is not None and tokens < c * rung.serve.max_model_len
    return rung.status.is_context_failure or short


def proof(ladder: Ladder, rung: Rung) -> list[int]:
    """Rungs of the same config that booted, if one of them passed a smoke test; else []."""
    same = [r for r in ladder.rungs if r.config == rung.config and r.status.booted and not r.smoke_test.failed]
    return [r.index for r in same] if any(r.smoke_test.passed for r in same) else []


def climb_view(rungs: list[Rung]) -> list[Rung]:
    """The climbed rungs in order; a replay of the last one stands in its place."""
    view: list[Rung] = []
    for rung in rungs:
        if rung.replay_of is None:
            view.append(rung)
        elif view and view[-1].config == rung.config:
            view[-1] = rung
    return view


@dataclass(frozen=True)
class Phase:
    """The knob being climbed, and every rung on its line (replays too) in order."""

    variable: Variable
    line: tuple[Rung, ...]
    bounded: bool = False  # the engine's boot proves no size: see pool_bounded

    def value(self, rung: Rung) -> int:
        return getattr(rung.serve, self.variable) or 0

    def latest(self) -> dict[int, Rung]:
        return {self.value(r): r for r in self.line}

    def best_good(self, c: int) -> Rung | None:
        good = [r for r in self.latest().values() if is_good(r, c)]
        return max(good, key=self.value, default=None)

    def lowest_bad(self, c: int) -> int | None:
        return min((v for v, r in self.latest().items() if is_bad(r, c)), default=None)

    def before(self, rung: Rung, view: list[Rung]) -> Rung | None:
        indices = {r.index for r in self.line}
        on_line = [r for r in view if r.index in indices and r.index < rung.index]
        return on_line[-1] if on_line else None


def phase_of(ladder: Ladder, view: list[Rung]) -> Phase:
    batched, bounded = [r for r in view if r.climbs == MNBT], pool_bounded(ladder)
    if not batched:  # a joint rung (the predict policy's) is on neither knob's line
        return Phase(MML, tuple(r for r in ladder.rungs if r.climbs not in (MNBT, JOINT)), bounded)
    ceiling_mml, floor_mnbt = batched[0].serve.max_model_len, ladder.floor.max_num_batched_tokens
    line = [
        r
        for r in ladder.rungs
        if r.serve.max_model_len == ceiling_mml
        and (r.climbs == MNBT or (r.climbs != JOINT and r.serve.max_num_batched_tokens == floor_mnbt))
    ]
    return Phase(MNBT, tuple(line), bounded)
