"""Every route of the climb, for both policies, on real H200 boots (and the same logs retargeted)."""

import pytest

from redline.errors import LadderError
from redline.models.ladder import Ceiling
from redline.policy import next_step, place_boot
from tests.conftest import h200_log
from tests.ladder.helpers import LLAMA, QWEN, boot, crash_env_log, force, ladder, q32_boot, q32_oom, smoke

# -- the real sequences (qwen32b on one H200) -------------------------------------------------


def test_signal_jumps_from_the_real_131072_boot_to_within_1pct_below_its_256848_kv_tokens():
    state = boot(ladder(floor=(131072, 8192)), h200_log("q32_128k.log"))
    step = next_step(state)
    assert step.route == "run_rung" and step.climbs == "max_model_len"
    assert 0.99 * 256_848 <= step.rung.max_model_len <= 256_848
    assert step.rung.max_num_batched_tokens == 8192  # one variable at a time


def test_signal_after_the_real_262144_failure_tries_at_most_the_estimated_256848():
    state = smoke(boot(ladder(floor=(131072, 8192)), h200_log("q32_128k.log")))
    state = force(state, h200_log("q32_256k.log"))
    step = next_step(state)
    assert step.route == "run_rung"
    assert 131_072 < step.rung.max_model_len <= 256_848
    assert step.rung.max_model_len >= 0.99 * 256_848


def test_signal_from_a_floor_that_fails_tries_the_estimate():
    state = boot(ladder(floor=(262144, 8192)), h200_log("q32_256k.log"))
    step = next_step(state)
    assert step.route == "run_rung" and step.rung.max_model_len == 256_848


def test_doubling_from_the_real_131072_boot_smoke_tests_then_doubles_to_262144():
    state = boot(ladder(floor=(131072, 8192), policy="doubling"), h200_log("q32_128k.log"))
    assert next_step(state).route == "smoke_test"
    step = next_step(smoke(state))
    assert step.route == "run_rung" and step.rung.max_model_len == 262_144


def test_doubling_takes_the_real_262144_failure_as_the_max_model_len_ceiling():
    state = smoke(boot(ladder(floor=(131072, 8192), policy="doubling"), h200_log("q32_128k.log")))
    state = boot(state, h200_log("q32_256k.log"))
    step = next_step(state)
    # no retry at the estimate: the seed's ladder; the climb moves on to batched tokens at 131,072
    assert step.route == "run_rung" and step.climbs == "max_num_batched_tokens"
    assert (step.rung.max_model_len, step.rung.max_num_batched_tokens) == (131_072, 16_384)


# -- route: floor, smoke test, climb ------------------------------------------------------------------


def test_no_rung_runs_the_floor():
    step = next_step(ladder(floor=(32768, 4096)))
    assert step.route == "run_rung" and step.climbs == "floor"
    assert (step.rung.max_model_len, step.rung.max_num_batched_tokens) == (32768, 4096)
    assert step.rung.model == QWEN and step.rung.gpu_memory_utilization == 0.9


def test_signal_climbs_without_a_smoke_test_while_the_boot_shows_headroom():
    state = boot(ladder(floor=(32768, 8192)), q32_boot(32768))
    step = next_step(state)
    assert step.route == "run_rung" and step.rung.max_model_len == 256_848


def test_signal_smoke_tests_the_rung_at_its_predicted_ceiling():
    state = boot(boot(ladder(floor=(32768, 8192)), q32_boot(32768)), q32_boot(256_848))
    step = next_step(state)
    assert step.route == "smoke_test" and step.rung_index == 2
    assert step.smoke.concurrency == 1 and 0.9 * 256_848 < step.smoke.input_len + step.smoke.output_len <= 256_848


def test_doubling_smoke_tests_every_booted_rung_even_with_headroom():
    state = boot(ladder(floor=(32768, 8192), policy="doubling"), q32_boot(32768))
    assert next_step(state).route == "smoke_test"
    assert next_step(smoke(state)).rung.max_model_len == 65_536


def test_signal_smoke_tested_max_model_len_ceiling_starts_the_batched_tokens_phase():
    state = boot(ladder(path=LLAMA, floor=(32768, 8192)), h200_log("l8b_32k.log"))
    state = boot(state, h200_log("l8b_mnbt8192.log"))
    assert next_step(state).route == "smoke_test"  # capped by max_position_embeddings: the predicted ceiling
    state = smoke(state)
    step = next_step(state)
    assert step.route == "run_rung" and step.climbs == "max_num_batched_tokens"
    assert (step.rung.max_model_len, step.rung.max_num_batched_tokens) == (131_072, 16_384)  # first step doubles


# -- caps, rounding and the concurrency floor ---------------------------------------------------------


def test_max_position_embeddings_caps_the_jump_unless_long_context_is_allowed():
    capped = ladder(path=LLAMA, floor=(32768, 8192))
    assert next_step(boot(capped, h200_log("l8b_32k.log"))).rung.max_model_len == 131_072
    free = capped.model_copy(update={"allow_long_context": True})
    assert next_step(boot(free, h200_log("l8b_32k.log"))).rung.max_model_len == 896_912


def test_the_jump_is_rounded_down_to_the_kv_block_size():
    state = boot(ladder(floor=(32768, 8192), kv_block_size=1000), q32_boot(32768))
    assert next_step(state).rung.max_model_len == 256_000


def test_the_concurrency_floor_divides_what_the_kv_cache_holds():
    state = boot(ladder(floor=(32768, 8192), min_concurrency=2), q32_boot(32768))
    assert next_step(state).rung.max_model_len == 128_416  # 256,848 / 2 = 128,424, down to a 16-token block


def test_a_boot_under_the_concurrency_floor_counts_as_a_context_failure():
    state = boot(ladder(floor=(131072, 8192), min_concurrency=2), h200_log("q32_128k.log"))
    step = next_step(state)  # 1.96x < 2: the floor itself is too long; try what fits twice
    assert step.route == "run_rung" and step.rung.max_model_len == 128_416


# -- context failures ---------------------------------------------------------------------------------


def test_signal_tries_the_estimate_once_then_ends_the_phase_at_the_best_good_rung():
    state = boot(ladder(floor=(32768, 8192)), q32_boot(32768))
    state = force(state, q32_oom(256_848, 250_000))  # the jump fails after all (say more activation)
    step = next_step(state)
    assert step.route == "run_rung" and step.rung.max_model_len == 250_000
    state = boot(state, q32_oom(250_000, 249_000))  # and so does the retry
    step = next_step(state)
    # the retry is spent; the best good rung (the floor) was never smoke-tested: replay it to test it
    assert step.route == "run_rung" and step.replay_of == 1 and step.rung.max_model_len == 32_768


def test_a_retry_that_boots_is_smoke_tested_as_the_ceiling_candidate():
    state = boot(ladder(floor=(32768, 8192)), q32_boot(32768))
    state = force(state, q32_oom(256_848, 250_000))
    state = boot(state, q32_boot(250_000, kv_tokens=250_000))
    step = next_step(state)
    assert step.route == "smoke_test" and step.rung_index == 3


def test_a_failure_whose_estimate_is_not_above_the_best_good_rung_is_not_retried():
    state = smoke(boot(ladder(floor=(131072, 8192), policy="signal"), h200_log("q32_128k.log")))
    state = force(state, q32_oom(262_144, 100_000))
    step = next_step(state)
    assert step.climbs == "max_num_batched_tokens" and step.rung.max_model_len == 131_072


# -- non-context failures: diagnose, never retry blindly ---------------------------------------------


@pytest.mark.parametrize("policy", ["signal", "doubling"])
def test_a_non_context_failure_routes_to_diagnose(policy):
    state = force(boot(ladder(policy=policy), q32_boot(32768)), crash_env_log(65536))
    step = next_step(state)
    assert step.route == "diagnose" and step.rung_index == 2 and step.rung is None
    assert "crash_env" in step.reason and "VLLM_ATENTION_BACKEND" in step.reason


def test_a_failed_floor_that_is_not_a_context_failure_is_diagnosed():
    state = boot(ladder(floor=(65536, 8192)), crash_env_log(65536))
    assert next_step(state).route == "diagnose"


def test_after_a_diagnosis_a_replay_that_boots_takes_the_failed_rungs_place():
    state = smoke(boot(ladder(policy="doubling"), q32_boot(32768)))
    state = boot(state, crash_env_log(65536))
    assert next_step(state).route == "diagnose"
    state = boot(state, q32_boot(65536))  # the same config after the fix: recorded as a replay of rung 2
    assert state.rungs[-1].replay_of == 2
    assert next_step(state).route == "smoke_test"
    assert next_step(smoke(state)).rung.max_model_len == 131_072


# -- smoke test failures ------------------------------------------------------------------------------


def test_a_failed_smoke_test_makes_the_best_lower_passed_rung_the_ceiling():
    state = smoke(boot(ladder(policy="doubling"), q32_boot(32768)))
    state = smoke(boot(state, q32_boot(65536)))
    state = smoke(boot(state, q32_boot(131072)), "fail")
    step = next_step(state)
    assert step.route == "record_ceiling" and step.rung_index == 2 and step.rung.max_model_len == 65_536


def test_a_failed_smoke_test_with_no_lower_pass_routes_to_diagnose():
    state = boot(boot(ladder(), q32_boot(32768)), q32_boot(256_848))
    step = next_step(smoke(state, "fail"))
    assert step.route == "diagnose" and step.rung_index == 2


# -- the batched-tokens phase -------------------------------------------------------------------------


def _llama_at_ceiling(**fields):
    state = ladder(path=LLAMA, floor=(131072, 8192), **fields)
    return smoke(boot(state, h200_log("l8b_mnbt8192.log")))


def test_batched_tokens_after_two_boots_spend_the_measured_slack_over_the_activation_slope():
    state = _llama_at_ceiling(max_num_batched_tokens_cap=1 << 22)
    state = force(state, h200_log("l8b_mnbt32768.log"), climbs="max_num_batched_tokens")
    step = next_step(state)
    slope = (3.46 - 1.1) / (32768 - 8192)
    slack_gib = (877_568 - 131_072) * 107.13 / 877_568
    expected = int((32768 + 0.9 * slack_gib / slope) // 16 * 16)
    assert step.route == "run_rung" and step.rung.max_num_batched_tokens == expected
    assert step.rung.max_model_len == 131_072  # held at its ceiling


def test_batched_tokens_are_capped_at_the_max_model_len_ceiling_by_default():
    state = force(_llama_at_ceiling(), h200_log("l8b_mnbt32768.log"), climbs="max_num_batched_tokens")
    step = next_step(state)
    assert step.rung.max_num_batched_tokens == 131_072
    state = boot(state, h200_log("l8b_mnbt131072.log"))
    assert next_step(state).route == "smoke_test"  # at the cap: the predicted ceiling
    step = next_step(smoke(state))
    assert step.route == "record_ceiling" and step.rung.max_num_batched_tokens == 131_072


def test_no_kv_slack_at_the_max_model_len_ceiling_records_it_without_climbing_batched_tokens():
    state = smoke(boot(boot(ladder(), q32_boot(32768)), q32_boot(256_848)))
    step = next_step(state)
    assert step.route == "record_ceiling" and step.rung.max_model_len == 256_848
    assert step.rung.max_num_batched_tokens == 8192


def test_a_batched_tokens_context_failure_ends_the_phase_at_the_last_good_rung():
    state = smoke(boot(ladder(floor=(131072, 8192), policy="doubling"), h200_log("q32_128k.log")))
    state = boot(state, h200_log("q32_256k.log"))
    state = smoke(
        boot(
            state,
            q32_boot(131072)
            .replace("max_num_batched_tokens': 8192", "max_num_batched_tokens': 16384")
            .replace("max_num_batched_tokens=8192", "max_num_batched_tokens=16384"),
        )
    )
    state = boot(state, q32_oom(131072, 120_000).replace("8192", "32768"))
    step = next_step(state)
    assert step.route == "record_ceiling" and step.rung.max_num_batched_tokens == 16_384


# -- replay and done ----------------------------------------------------------------------------------


def test_replay_on_request_returns_the_named_rungs_exact_config():
    state = boot(boot(ladder(), q32_boot(32768)), q32_boot(256_848))
    step = next_step(state, replay=1)
    assert step.route == "run_rung" and step.replay_of == 1 and step.rung == state.rungs[0].serve


def test_replay_of_a_rung_that_does_not_exist_is_refused():
    with pytest.raises(LadderError, match="no rung 3"):
        next_step(boot(ladder(), q32_boot(32768)), replay=3)


def test_a_replay_of_the_last_rung_stands_in_its_place():
    state = boot(ladder(), q32_boot(32768))
    state = boot(state, q32_boot(32768))  # the same config again: a replay of rung 1, and the climb goes on from it
    assert state.rungs[-1].replay_of == 1
    assert next_step(state).rung.max_model_len == 256_848


def test_a_replay_off_the_climb_is_smoke_tested_then_the_climb_resumes():
    state = boot(boot(ladder(), q32_boot(32768)), q32_boot(256_848))  # rung 2 awaits its smoke test
    state = boot(state, q32_boot(32768))  # but rung 1 is replayed first
    step = next_step(state)
    assert state.rungs[-1].replay_of == 1 and step.route == "smoke_test" and step.rung_index == 3
    step = next_step(smoke(state))  # rung 2's server is gone: boot it again to smoke-test it
    assert step.route == "run_rung" and step.replay_of == 2 and step.rung.max_model_len == 256_848
    state = boot(smoke(state), q32_boot(256_848))
    assert next_step(state).route == "smoke_test" and next_step(state).rung_index == 4


def test_a_replay_that_does_not_reproduce_its_rung_is_diagnosed():
    state = smoke(boot(boot(ladder(), q32_boot(32768)), q32_boot(256_848)))
    state = force(state, q32_oom(32768, 30_000), replay_of=1)
    assert next_step(state).route == "diagnose"


def test_done_only_once_a_ceiling_is_recorded():
    state = smoke(boot(boot(ladder(), q32_boot(32768)), q32_boot(256_848)))
    assert next_step(state).route == "record_ceiling"
    ceiling = Ceiling(
        max_model_len=256_848,
        max_num_batched_tokens=8192,
        proven_by=[2],
        serve_command="vllm serve",
        reason="test",
        recorded_at="2026-11-30T10:00:00Z",
    )
    done = state.model_copy(update={"ceiling": ceiling})
    assert next_step(done).route == "done"


# -- placing a hand-recorded boot ---------------------------------------------------------------------


def test_a_boot_that_is_neither_the_expected_rung_nor_a_past_one_is_refused_naming_both():
    state = boot(ladder(), q32_boot(32768))
    with pytest.raises(LadderError) as info:
        place_boot(state, 65536, 8192)
    assert "65,536" in str(info.value) and "256,848" in str(info.value)


def test_a_boot_while_a_smoke_test_is_due_is_refused():
    state = boot(ladder(policy="doubling"), q32_boot(32768))
    with pytest.raises(LadderError, match="smoke test"):
        place_boot(state, 65536, 8192)
