"""The decision, not the timing: on the qwen32b table the signal policy confirms >= 99% of the true
ceiling in at most 2 boots and 1 smoke test from a floor of 32,768, where doubling stops at 131,072."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ladder_policies.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("ladder_policies", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_qwen32b_table_is_the_real_boots(bench):
    table = bench.tables()["qwen32b"]
    assert table.true_max_model_len() == 256_848
    assert table.boot(131072, 8192).kv_cache_tokens == 256_848
    failed = table.boot(262144, 8192)
    assert failed.status.value == "oom_kv_cache" and failed.estimated_max_model_len == 256_848


def test_signal_confirms_99pct_of_qwen32b_in_two_boots_and_one_smoke_test(bench):
    run = bench.climb(bench.tables()["qwen32b"], "signal")
    assert run.mml_boots <= 2 and run.mml_smokes <= 1
    assert 0.99 * 256_848 <= run.mml_ceiling <= 256_848
    assert run.ladder.ceiling is not None and run.ladder.ceiling.max_model_len == run.mml_ceiling
    assert all(r.simulated for r in run.ladder.rungs)


def test_doubling_needs_four_boots_and_stops_at_131072_on_qwen32b(bench):
    run = bench.climb(bench.tables()["qwen32b"], "doubling")
    assert (run.mml_boots, run.mml_ceiling) == (4, 131_072)


def test_signal_stops_at_llama8bs_max_position_embeddings(bench):
    run = bench.climb(bench.tables()["llama8b"], "signal")
    assert (run.mml_boots, run.mml_smokes, run.mml_ceiling) == (2, 1, 131_072)
    assert run.ladder.ceiling.max_num_batched_tokens == 131_072
