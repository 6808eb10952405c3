"""A real graph-mode climb from a cold torch.compile cache on one H100 (tests/data/vllm-0.26.0-h100-ladder-cold: llama8b,
vLLM 0.26.0, the predict policy, a floor of 32,768 / 8,192, 16 requests): the floor held 13.73x, the rung its log
said fits (28,112) held 16.01x and passed its smoke test, so the ceiling was proven in 2 boots; a third boot tried
16,384 batched tokens and held 15.81x, and the ceiling stayed rung 2. Each rung is read back three ways that must
agree: as the ladder recorded it, from its own boot log, and by the route replayed over the rungs before it; and the
memory model's answer for each config, cold, is set against the boot that measured it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.cli import main
from redline.engines.vllm import parse_boot_log
from redline.ledger import read_ladder
from redline.models.ladder import Ladder
from redline.policy import next_step

CLIMB = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h100-ladder-cold" / "llama8b"
CONFIG = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "boots" / "models" / "llama8b"


@pytest.fixture(scope="module")
def ladder() -> Ladder:
    return read_ladder(CLIMB / "ladder.yml")


def test_the_cold_climb_proved_its_ceiling_in_two_boots(ladder: Ladder) -> None:
    assert ladder.ceiling is not None and ladder.ceiling.proven_by == [2]
    assert (ladder.ceiling.max_model_len, ladder.ceiling.max_num_batched_tokens) == (28_112, 8_192)
    assert ladder.deployment_compile_cache == ladder.ceiling.compile_cache == "cold"
    proof = ladder.rungs[1]
    assert proof.smoke_test.outcome == "pass" and not proof.simulated
    assert (proof.signals.kv_cache_tokens or 0) >= 16 * 28_112  # 449,968 >= 449,792: 16.01x
    assert [r.signals.compile_cache for r in ladder.rungs] == ["cold"] * 3


@pytest.mark.parametrize("index", [1, 2, 3])
def test_each_rung_is_what_its_own_boot_log_says(ladder: Ladder, index: int) -> None:
    rung = ladder.rungs[index - 1]
    log = parse_boot_log((CLIMB / rung.log_file).read_text())
    assert (log.max_model_len, log.max_num_batched_tokens) == (
        rung.serve.max_model_len,
        rung.serve.max_num_batched_tokens,
    )
    assert (log.kv_cache_tokens, log.compile_cache) == (rung.signals.kv_cache_tokens, rung.signals.compile_cache)
    assert log.memory.peak_activation_gib == rung.signals.memory.peak_activation_gib


def test_the_route_replayed_over_the_rungs_asks_for_what_the_climb_booted(ladder: Ladder) -> None:
    for k, rung in enumerate(ladder.rungs):
        step = next_step(ladder.model_copy(update={"rungs": ladder.rungs[:k], "ceiling": None}))
        assert step.route == "run_rung" and step.rung is not None
        assert (step.rung.max_model_len, step.rung.max_num_batched_tokens) == (
            rung.serve.max_model_len,
            rung.serve.max_num_batched_tokens,
        )
    last = next_step(ladder.model_copy(update={"ceiling": None}))
    assert (last.route, last.rung_index) == ("record_ceiling", 2)
    assert "proven on a cold torch.compile cache" in last.reason


@pytest.mark.parametrize("index", [1, 3])
def test_the_memory_model_predicts_each_cold_boot_within_1pct(
    ladder: Ladder, index: int, capsys: pytest.CaptureFixture[str]
) -> None:
    rung = ladder.rungs[index - 1]
    ask = [
        *("predict", "--model", str(CONFIG), "--gpu-name", "NVIDIA H100 80GB HBM3", "--gpu-memory-gib", "79.6"),
        *("--engine-version", "0.26.0", "--max-model-len", str(rung.serve.max_model_len)),
        *("--max-num-batched-tokens", str(rung.serve.max_num_batched_tokens), "--json"),
    ]
    capsys.readouterr()
    assert main(ask) == 0
    said = json.loads(capsys.readouterr().out)
    measured = rung.signals.kv_cache_tokens
    assert said["compile_cache"] == "cold" and said["provenance"] == "predicted" and measured
    assert abs(said["kv_cache_tokens"] - measured) / measured < 0.01
    assert said["kv_cache_tokens_low"] <= measured <= said["kv_cache_tokens_high"]
