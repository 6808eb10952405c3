"""The ladder's route over SGLang signals: its pool's tokens are the max_model_len candidate, and only a smoke
test confirms it, because SGLang boots at a context its pool cannot hold. The logs are the excerpts of
tests/engines/sglang_excerpts.py (SGLang 0.5.17's own texts) until real H200 logs are fixtures."""

import pytest

from redline.engines import get_engine
from redline.ledger import append_rung, set_smoke_test
from redline.models.ladder import Floor, Ladder, ModelRef, Rung, SmokeTest
from redline.policy import next_step, place_boot, smoke_workload
from tests.engines import sglang_excerpts as x

SGLANG = get_engine("sglang")
POOL = 242_360  # what the H200 excerpt's pool holds at mem_fraction_static 0.9
CANDIDATE = 242_352  # the pool rounded down to the ladder's 16-token blocks


def ladder(floor: tuple[int, int] = (32768, 8192), engine: str = "sglang", **fields) -> Ladder:
    fields.setdefault("model", ModelRef(key="qwen32b", path=x.MODEL, max_position_embeddings=1_048_576))
    return Ladder(engine=engine, floor=Floor(max_model_len=floor[0], max_num_batched_tokens=floor[1]), **fields)


def boot(state: Ladder, log_text: str) -> Ladder:
    """The rung the SGLang log shows, placed where the route expects it (as rung_record does, without files).

    Read by the SGLang reader whatever the ladder's engine, so a vLLM ladder fed the same signals shows
    that the route differs by the engine's fact alone.
    """
    signals = SGLANG.parse_boot_log(log_text)
    place = place_boot(state, signals.max_model_len, signals.max_num_batched_tokens)
    rung = Rung(
        index=len(state.rungs) + 1,
        climbs=place.climbs,
        replay_of=place.replay_of,
        status=signals.status,
        reason=signals.reason,
        serve=place.serve,
        signals=signals,
    )
    return append_rung(state, rung)


def smoke(state: Ladder, outcome: str = "pass") -> Ladder:
    return set_smoke_test(state, SmokeTest(attempted=True, outcome=outcome, reason=f"test: {outcome}"))


def test_an_sglang_ladder_climbs_from_its_floor_to_the_pool_and_records_it_only_after_a_smoke_test():
    state = boot(ladder(max_num_batched_tokens_cap=8192), x.good_boot(32768, 8192, POOL))
    step = next_step(state)
    assert (step.route, step.climbs, step.rung.max_model_len) == ("run_rung", "max_model_len", CANDIDATE)
    assert "its KV pool's tokens: a candidate only a smoke test confirms" in step.reason
    assert step.rung.max_num_batched_tokens == 8192  # one knob at a time

    state = boot(state, x.good_boot(CANDIDATE, 8192, POOL))
    step = next_step(state)
    assert (step.route, step.rung_index) == ("smoke_test", 2)  # never record_ceiling before its smoke test
    assert "SGLang boots at a context its KV pool cannot hold, so only this smoke test confirms it" in step.reason

    step = next_step(smoke(state))
    assert (step.route, step.rung_index, step.rung.max_model_len) == ("record_ceiling", 2, CANDIDATE)


def test_the_smoke_test_of_an_sglang_candidate_fills_the_context_to_within_a_tenth_of_a_percent():
    state = boot(boot(ladder(), x.good_boot(32768, 8192, POOL)), x.good_boot(CANDIDATE, 8192, POOL))
    w = next_step(state).smoke
    assert w.input_len + w.output_len == CANDIDATE - CANDIDATE // 1000
    assert w.input_len + w.output_len < POOL - 6  # SGLang admits inputs up to min(context, pool) - 6 tokens
    vllm = ladder(engine="vllm")  # the same route on vLLM keeps its 1% margin: its boot proved the context
    assert smoke_workload(vllm, state.rungs[1]).input_len + 128 == CANDIDATE - CANDIDATE // 100


def test_a_boot_at_a_context_the_pool_cannot_hold_boots_and_the_route_retries_at_what_the_pool_holds():
    state = boot(ladder(floor=(524_288, 8192)), x.good_boot(524_288, 8192, POOL))
    assert state.rungs[0].status.booted  # SGLang said nothing at boot
    step = next_step(state)
    assert (step.route, step.rung.max_model_len) == ("run_rung", CANDIDATE)
    assert f"booted with {POOL:,} KV tokens, fewer than 1 request(s) of 524,288" in step.reason
    assert "what it says fits, once" in step.reason


def test_the_concurrency_floor_divides_the_pool():
    state = boot(ladder(min_concurrency=4), x.good_boot(32768, 8192, POOL))
    assert next_step(state).rung.max_model_len == (POOL // 4) // 16 * 16


def test_a_failed_smoke_test_at_the_candidate_with_no_lower_pass_is_diagnosed_not_recorded():
    state = boot(boot(ladder(), x.good_boot(32768, 8192, POOL)), x.good_boot(CANDIDATE, 8192, POOL))
    step = next_step(smoke(state, "fail"))
    assert step.route == "diagnose"


def test_each_batched_tokens_rung_is_smoke_tested_before_the_next_and_a_failure_keeps_the_last_pass():
    state = boot(ladder(floor=(131_072, 8192)), x.good_boot(131_072, 8192, POOL))
    state = smoke(boot(state, x.good_boot(CANDIDATE, 8192, POOL)))  # the max_model_len ceiling, smoke-tested
    step = next_step(state)
    assert (step.route, step.climbs, step.rung.max_num_batched_tokens) == ("run_rung", "max_num_batched_tokens", 16384)

    state = boot(state, x.good_boot(CANDIDATE, 16384, POOL))
    step = next_step(state)
    assert step.route == "smoke_test"  # vLLM would climb on: its boot profiled the chunk; SGLang's did not
    assert "SGLang profiles no prefill chunk at boot" in step.reason

    state = boot(smoke(state), x.good_boot(CANDIDATE, 32768, POOL))
    assert next_step(state).route == "smoke_test"
    step = next_step(smoke(state, "fail"))
    assert (step.route, step.rung.max_num_batched_tokens) == ("record_ceiling", 16384)


def test_the_difference_is_the_engine_fact_alone_the_same_signals_on_a_vllm_ladder_climb_on_unsmoked():
    def climb(engine: str) -> Ladder:
        state = boot(ladder(floor=(131_072, 8192), engine=engine), x.good_boot(131_072, 8192, POOL))
        state = smoke(boot(state, x.good_boot(CANDIDATE, 8192, POOL)))
        return boot(state, x.good_boot(CANDIDATE, 16384, POOL))

    assert next_step(climb("sglang")).route == "smoke_test"
    step = next_step(climb("vllm"))  # vLLM's boot profiles the chunk: the signal policy climbs straight on
    assert (step.route, step.rung.max_num_batched_tokens) == ("run_rung", 32768)


@pytest.mark.parametrize("failure", [x.NOT_ENOUGH, x.NO_KV_MEMORY])
def test_a_memory_share_failure_is_a_context_failure_that_names_mem_fraction_static(failure):
    state = boot(ladder(), x.scheduler_failure(failure))
    assert state.rungs[0].status.is_context_failure
    step = next_step(state)
    assert step.route == "diagnose" and "--mem-fraction-static" in step.reason


def test_a_context_length_refusal_is_diagnosed_never_retried():
    state = boot(ladder(floor=(262_144, 8192)), x.scheduler_failure(x.CONTEXT_REFUSED, context=262_144))
    step = next_step(state)
    assert step.route == "diagnose" and "crash_config" in step.reason
