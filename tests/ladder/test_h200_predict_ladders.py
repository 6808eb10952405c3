"""The predict policy's real H200 climbs (tests/data/vllm-0.26.0-h200-predict), re-read: each whole ceiling in two
boots and one smoke test, each joint rung inside the band predicted before it booted, the floor's real boot
replayed into the same plan today, and the campaign dry run that named a cell predicted infeasible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.engines.vllm import parse_boot_log
from redline.ledger import create_ladder, read_ladder
from redline.models.ladder import Ladder
from redline.ops.ladder.record import record_boot
from redline.ops.predict.corpus import shipped
from redline.policy import next_step

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-predict"
LADDERS = ("llama8b", "qwen3-14b")


def ladder(name: str) -> Ladder:
    return read_ladder(DATA / name / "ladder.yml")


@pytest.mark.parametrize("name", LADDERS)
def test_the_whole_ceiling_took_two_boots_and_one_smoke_test(name: str) -> None:
    state = ladder(name)
    assert state.policy == "predict" and state.min_concurrency == 16 and state.ceiling is not None
    assert [r.climbs for r in state.rungs] == ["floor", "joint"] and all(r.status.booted for r in state.rungs)
    assert [r.smoke_test.outcome for r in state.rungs] == [None, "pass"]
    assert state.ceiling.proven_by == [2] and state.ceiling.max_num_batched_tokens == 8192
    assert next_step(state).route == "done"


@pytest.mark.parametrize("name", LADDERS)
def test_each_rung_is_what_its_log_says_and_the_joint_rung_is_inside_its_band(name: str) -> None:
    state = ladder(name)
    for rung in state.rungs:
        log = (DATA / name / "ladder.runs" / f"rung-{rung.index:03d}" / "boot.log").read_text()
        assert parse_boot_log(log).kv_cache_tokens == rung.signals.kv_cache_tokens
    joint = state.rungs[1]
    assert joint.predicted == state.joint.predicted and joint.drift is None  # type: ignore[union-attr]
    seen, p = joint.signals.kv_cache_tokens, joint.predicted
    assert p is not None and seen is not None and p.kv_cache_tokens_low <= seen <= p.kv_cache_tokens_high
    assert abs(seen - p.kv_cache_tokens) / seen < 0.001  # 0.004% (llama8b), 0.045% (qwen3-14b)
    assert 16 * joint.serve.max_model_len <= seen  # the concurrency floor held, to the block


def test_qwen3_14b_was_predicted_with_no_boot_of_its_shape_in_any_corpus() -> None:
    shape = ladder("qwen3-14b").model.shape
    assert shape is not None and all(o.shape != shape for o in shipped("vllm"))


def test_the_real_floor_boot_replayed_asks_for_the_joint_ceiling_not_the_degenerate_one(tmp_path: Path) -> None:
    """The llama8b floor (903,488 KV tokens: the degenerate ceiling is 56,464 / 2,048) through record_boot today,
    with today's corpus: the next rung is max_model_len within 1% of 56,464 with 8,192 batched tokens."""
    recorded = ladder("llama8b")
    fresh = recorded.model_copy(update={"rungs": [], "ceiling": None, "joint": None})
    path = tmp_path / "ladders" / "l8b.yml"
    path.parent.mkdir()
    create_ladder(path, fresh)
    record_boot(path, (DATA / "llama8b" / "ladder.runs" / "rung-001" / "boot.log").read_text())
    step = next_step(read_ladder(path))
    assert step.route == "run_rung" and step.climbs == "joint" and step.rung is not None
    assert step.rung.max_num_batched_tokens == 8192 and abs(step.rung.max_model_len - 56_464) / 56_464 < 0.01
    assert abs(step.rung.max_model_len - 56_160) <= 64  # what the H200 climb booted, give or take four blocks


def test_the_ceilings_state_what_8192_batched_tokens_cost() -> None:
    assert ladder("llama8b").ceiling.tradeoff.startswith(  # type: ignore[union-attr]
        "max_num_batched_tokens 2,048 -> 8,192 (2 doublings) cost 4,705 KV tokens (0.52% of the floor's 903,488)"
    )
    assert "162 tokens of max_model_len per doubling at 16 requests" in ladder("qwen3-14b").ceiling.tradeoff  # type: ignore[union-attr,operator]


def test_the_h200_campaign_dry_run_named_the_bf16_cell_predicted_infeasible() -> None:
    text = (DATA / "campaign-dry-run.txt").read_text()
    plan = json.JSONDecoder().raw_decode(text[text.index("{") :])[0]["plan"]  # the dry run's answer, printed first
    cells = {c["name"]: c["predicted"] for c in plan["cells"]}
    assert cells["kvauto"]["feasible"] == "no" and cells["kvfp8"]["feasible"] == "yes"
    assert cells["kvauto"]["needed_tokens"] == 294_912 and any("kvauto" in g for g in plan["gates"])
