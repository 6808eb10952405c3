"""The next levers (policy/levers.py): ranked by expected gain per cost, each with its gate, only bytes-cutting ones
at the memory wall; every gain labelled predicted."""

from __future__ import annotations

import pytest

from redline.models.serve import ServeConfig
from redline.models.sol import SolFigure
from redline.policy.levers import LeverInput, next_levers

SERVE = ServeConfig(model="/models/llama8b", max_model_len=32768, max_num_batched_tokens=8192, max_num_seqs=16)


def sol(pct: float, share: float = 0.875) -> SolFigure:
    return SolFigure(key="h200-sxm", ceiling_tokens_per_s=4187.0, pct_of_ceiling=pct, weights_share=share, basis="x")


def test_throughput_levers_are_ranked_by_gain_per_cost_and_each_has_a_gate() -> None:
    levers = next_levers(LeverInput(claim="throughput", serve=SERVE, concurrencies=[1, 16], sol=sol(45.0)))
    names = [lever.lever for lever in levers]
    assert names[0] == "bigger_batch" and set(names) >= {"fp8_kv_cache", "fp8_weights", "max_num_batched_tokens"}
    assert [lever.score for lever in levers] == sorted((lever.score for lever in levers), reverse=True)
    batch = levers[0]
    assert batch.expected_gain_pct == pytest.approx(0.875 / (2 - 0.875) * 100, abs=0.1)  # the ceiling at 2x batch
    assert "c=32" in batch.gate and batch.cost == "low" and batch.provenance == "predicted"
    fp8_kv = next(lever for lever in levers if lever.lever == "fp8_kv_cache")
    assert fp8_kv.expected_gain_pct == pytest.approx((1 / (1 - 0.125 / 2) - 1) * 100, abs=0.1)
    assert "accuracy" in fp8_kv.gate and "ab_run" in fp8_kv.gate


def test_at_the_memory_wall_only_levers_that_cut_bytes_remain() -> None:
    levers = next_levers(LeverInput(claim="throughput", serve=SERVE, concurrencies=[16], sol=sol(90.0)))
    assert {lever.lever for lever in levers} <= {"fp8_kv_cache", "fp8_weights", "speculative_decoding"}


def test_latency_levers_and_an_eager_config() -> None:
    eager = SERVE.model_copy(update={"enforce_eager": True})
    levers = next_levers(LeverInput(claim="latency", serve=eager, concurrencies=[1], sol=None))
    names = {lever.lever for lever in levers}
    assert {"cuda_graphs", "speculative_decoding", "tensor_parallel"} <= names and "bigger_batch" not in names
    assert "matched_graphs" in next(lever for lever in levers if lever.lever == "cuda_graphs").gate


def test_levers_already_pulled_are_not_offered() -> None:
    done = SERVE.model_copy(update={"kv_cache_dtype": "fp8", "max_num_batched_tokens": 32768})
    levers = next_levers(
        LeverInput(claim="throughput", serve=done, concurrencies=[16], sol=sol(70.0), quantization="fp8")
    )
    assert {lever.lever for lever in levers}.isdisjoint(
        {"fp8_kv_cache", "fp8_weights", "max_num_batched_tokens", "bigger_batch"}
    )
