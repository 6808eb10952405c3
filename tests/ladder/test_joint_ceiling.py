"""The predict policy: from the floor's boot, one rung at the predicted whole ceiling, a smoke test, the record.

The first test replays a real eager llama8b boot on the H200 (mnbt 2,048, the floor of a climb at
min_concurrency 16) through record_boot, as a rung runner records it: the memory model's plan must be the joint
ceiling, never the degenerate one (max_model_len to the last block with no room for batched tokens). The others
route synthetic histories made of real logs (tests/ladder/helpers.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.ledger import create_ladder, read_ladder
from redline.models.ladder import GpuProfile, JointPlan, Ladder, ModelRef, Prediction
from redline.models.shape import shape_of
from redline.ops.ladder.ceiling import ceiling_change
from redline.ops.ladder.record import record_boot
from redline.policy import next_step
from redline.policy.tradeoff import tradeoff
from tests.ladder.helpers import LLAMA, boot, force, ladder, q32_oom, retarget, smoke

DATA = Path(__file__).resolve().parents[1] / "data"
FLOOR_LOG = DATA / "vllm-0.26.0-h200-ab" / "ab" / "l8b-mnbt" / "trials" / "mnbt2048-1" / "boot.log"
CONFIG = (
    Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "boots" / "models" / "llama8b" / "config.json"
)
FIXED = {"enforce_eager": True, "load_format": "dummy", "max_num_seqs": 128}


def llama(floor: tuple[int, int] = (8192, 2048), **fields: object) -> Ladder:
    shape, _ = shape_of(json.loads(CONFIG.read_text()))
    model = ModelRef(key="llama8b", path=LLAMA, max_position_embeddings=131_072, shape=shape)
    gpu = GpuProfile(name="NVIDIA H200", memory_gib=140.4)
    fields = {"model": model, "gpu": gpu, "engine_version": "0.26.0", "policy": "predict", "fixed": FIXED, **fields}
    return ladder(LLAMA, floor=floor, **fields)


def test_from_the_real_floor_boot_the_next_rung_is_the_joint_ceiling_not_the_degenerate_one(tmp_path: Path) -> None:
    path = tmp_path / "ladders" / "l8b.yml"
    path.parent.mkdir()
    create_ladder(path, llama(min_concurrency=16))
    rung, written = record_boot(path, FLOOR_LOG.read_text())
    assert rung.signals.kv_cache_tokens == 903_968 and rung.climbs == "floor"
    plan = read_ladder(path).joint
    assert plan is not None and plan == written.joint
    step = next_step(written)
    assert step.route == "run_rung" and step.climbs == "joint" and step.predicted == plan.predicted
    assert step.rung is not None and step.rung.max_num_batched_tokens == 8192  # vLLM's default chunk, the target
    assert abs(step.rung.max_model_len - 56_464) / 56_464 < 0.01, plan.reason  # 903,488 tokens / 16, within 1%
    assert step.rung.max_model_len % 16 == 0 and 16 * step.rung.max_model_len <= plan.predicted.kv_cache_tokens_low


PLAN = JointPlan(
    max_model_len=56_048,
    max_num_batched_tokens=8192,
    predicted=Prediction(
        kv_cache_tokens=898_000, kv_cache_tokens_low=897_000, kv_cache_tokens_high=899_000, band_gib=0.1, basis="t"
    ),
    reason="test plan",
)


def floor_booted(**fields: object) -> Ladder:
    state = boot(llama(min_concurrency=16, **fields), retarget(FLOOR_LOG.read_text(), 8192, 2048))
    return state.model_copy(update={"joint": PLAN})


def joint_boot(state: Ladder, mml: int, kv_tokens: int, *, status_log: str | None = None) -> Ladder:
    log = status_log or retarget(FLOOR_LOG.read_text(), mml, 8192, kv_tokens=kv_tokens)
    return boot(state, log)


def test_the_joint_ceiling_is_two_boots_and_one_smoke_test() -> None:
    state = floor_booted()
    assert next_step(state).climbs == "joint"
    state = joint_boot(state, 56_048, 898_368)  # holds 16 x 56,148: under 1% more than it has
    assert state.rungs[-1].climbs == "joint" and state.rungs[-1].predicted == PLAN.predicted
    assert state.rungs[-1].drift is None  # 898,368 is inside 897,000 to 899,000
    step = next_step(state)
    assert step.route == "smoke_test" and step.rung_index == 2
    state = smoke(state)
    step = next_step(state)
    assert step.route == "record_ceiling" and step.rung_index == 2 and "both knobs at once" in step.reason
    assert [r.status.booted for r in state.rungs] == [True, True]  # the whole ceiling: two boots, one smoke test


def test_a_boot_outside_its_band_says_its_drift() -> None:
    state = joint_boot(floor_booted(), 56_048, 890_000)
    assert state.rungs[-1].drift is not None and "890,000 KV tokens booted, 898,000 predicted" in state.rungs[-1].drift


def test_a_joint_rung_that_holds_more_than_one_percent_beyond_climbs_once_more_to_what_it_holds() -> None:
    state = smoke(joint_boot(floor_booted(), 56_048, 960_000))  # 960,000 / 16 = 60,000: 9% more context
    step = next_step(state)
    assert step.route == "run_rung" and step.climbs == "joint" and step.rung.max_model_len == 60_000


def test_a_joint_rung_short_of_its_requests_is_retried_once_at_what_it_says_fits() -> None:
    state = joint_boot(floor_booted(), 56_048, 870_000)  # 870,000 < 16 x 56,048 = 896,768
    step = next_step(state)
    assert step.route == "run_rung" and step.climbs == "joint" and step.rung.max_model_len == 54_368  # 870,000 / 16


def test_a_joint_rung_that_fails_its_smoke_test_falls_back_to_one_knob_at_a_time_from_the_floor() -> None:
    state = smoke(joint_boot(floor_booted(), 56_048, 898_368), "fail")
    step = next_step(state)
    assert step.route == "run_rung" and step.climbs == "max_model_len"  # the signal climb, from the floor
    assert step.rung.max_num_batched_tokens == 2048 and step.rung.max_model_len == 56_496  # 903,968 / 16


def test_without_a_plan_the_predict_policy_climbs_as_the_signal_policy_does() -> None:
    state = floor_booted().model_copy(update={"joint": None})
    step, signal = next_step(state), next_step(state.model_copy(update={"policy": "signal"}))
    assert (
        (step.route, step.rung, step.climbs)
        == (signal.route, signal.rung, signal.climbs)
        == (
            "run_rung",
            signal.rung,
            "max_model_len",
        )
    )


def test_the_ceiling_states_what_its_knobs_cost_and_never_blames_one_it_cannot_tell() -> None:
    state = smoke(joint_boot(floor_booted(), 56_048, 898_368))  # the joint rung moved both knobs from the floor
    said = tradeoff(state, state.rungs[-1])
    assert said == (
        "max_model_len 8,192 -> 56,048 and max_num_batched_tokens 2,048 -> 8,192 together cost 5,600 KV tokens "
        "(0.62% of the floor's 903,968): which knob cost them is unknown: no two booted rungs differ in one of them "
        "alone (boot max_model_len 56,048 at max_num_batched_tokens 2,048 to tell)"
    )
    change = ceiling_change(state)
    assert change.result.tradeoff == said and change.result.max_num_batched_tokens == 8192


def test_a_ladder_of_another_policy_ignores_a_plan() -> None:
    state = force(floor_booted().model_copy(update={"policy": "signal"}), retarget(FLOOR_LOG.read_text(), 56_496, 2048))
    assert next_step(state).climbs != "joint"


@pytest.mark.parametrize("policy", ["signal", "doubling"])
def test_old_policies_never_plan_a_joint_rung(tmp_path: Path, policy: str) -> None:
    path = tmp_path / "ladders" / "l8b.yml"
    path.parent.mkdir()
    create_ladder(path, llama(min_concurrency=16, policy=policy))
    _, written = record_boot(path, FLOOR_LOG.read_text())
    assert written.joint is None and next_step(written).climbs != "joint"


def test_a_joint_rung_never_climbs_back_to_a_context_a_joint_rung_failed_at() -> None:
    """A joint rung refused at 56,048 (its log says 880,000 tokens fit); the retry at 54,992 boots with room for more:
    the climb may go up, but only below the context that already failed."""
    state = boot(floor_booted(), q32_oom(56_048, 16 * 55_000))
    assert state.rungs[-1].status.is_context_failure
    step = next_step(state)
    assert step.climbs == "joint" and step.rung.max_model_len == 54_992  # 880,000 / 16, block-rounded
    state = smoke(joint_boot(state, 54_992, 960_000))  # holds 16 x 60,000, more than the refused 56,048
    step = next_step(state)
    assert step.route == "run_rung" and step.rung.max_model_len == 56_032  # under 56,048, not 60,000


def test_a_cache_the_engine_keeps_a_block_of_is_not_climbed_into() -> None:
    """vLLM's CPU build: 4,096 tokens of cache serve a request of 3,968 (a 128-token block kept back): the joint
    rung at 3,968 that booted with 4,096 tokens and passed is the ceiling, not a reason to try 4,096."""
    predicted = PLAN.predicted.model_copy(
        update={
            "kv_cache_tokens": 4096,
            "kv_cache_tokens_low": 4096,
            "kv_cache_tokens_high": 4096,
            "reserved_tokens": 128,
        }
    )
    plan = PLAN.model_copy(update={"max_model_len": 3968, "max_num_batched_tokens": 8192, "predicted": predicted})
    state = boot(llama((1024, 2048), min_concurrency=1), retarget(FLOOR_LOG.read_text(), 1024, 2048, kv_tokens=4096))
    state = smoke(joint_boot(state.model_copy(update={"joint": plan}), 3968, 4096))
    step = next_step(state)
    assert step.route == "record_ceiling" and step.rung_index == 2, step.reason
