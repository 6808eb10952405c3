"""The boot-log reader against real vLLM 0.26.0 boots on an H200 (tests/data/vllm-0.26.0-h200).

Every figure asserted here is one the fixtures' README table gives.
"""

import pytest

from redline.engines.vllm import parse_boot_log, served_model
from redline.models import BootStatus
from tests.conftest import h200_log

BOOTED = [
    # file, max_model_len, batched tokens, KV GiB, KV tokens, concurrency, peak activation GiB
    ("l8b_32k.log", 32768, 8192, 109.49, 896_912, 27.37, 1.1),
    ("l8b_mnbt8192.log", 131072, 8192, 109.49, 896_912, 6.84, 1.1),
    ("l8b_mnbt32768.log", 131072, 32768, 107.13, 877_568, 6.70, 3.46),
    ("l8b_mnbt131072.log", 131072, 131072, 97.0, 794_624, 6.06, 13.59),
    ("q32_128k.log", 131072, 8192, 62.71, 256_848, 1.96, 1.61),
]


@pytest.mark.parametrize(("name", "mml", "mnbt", "kv_gib", "kv_tokens", "concurrency", "activation"), BOOTED)
def test_booted_fixture_figures(name, mml, mnbt, kv_gib, kv_tokens, concurrency, activation):
    signals = parse_boot_log(h200_log(name))
    assert signals.status is BootStatus.BOOT_OK
    assert signals.engine == "vllm" and signals.engine_version == "0.26.0"
    assert (signals.max_model_len, signals.max_num_batched_tokens) == (mml, mnbt)
    assert signals.available_kv_cache_gib == kv_gib
    assert signals.kv_cache_tokens == kv_tokens
    assert signals.max_concurrency == concurrency
    assert signals.max_concurrency_tokens == mml
    assert signals.memory.peak_activation_gib == activation
    assert signals.kv_cache_needed_gib is None and signals.estimated_max_model_len is None


def test_memory_breakdown_of_llama8b():
    memory = parse_boot_log(h200_log("l8b_32k.log")).memory
    assert memory.model_dump() == {
        "weights_gib": 15.0,
        "peak_activation_gib": 1.1,
        "non_torch_gib": 0.22,
        "cudagraph_gib": 0.98,
        "cudagraph_estimate_gib": None,  # the V2 runner estimates none (a V1 runner's log prints its estimate)
        "device_total_gib": 139.8,
        "requested_gib": 125.82,
    }


def test_timings_of_llama8b():
    timings = parse_boot_log(h200_log("l8b_32k.log")).timings
    assert (timings.init_engine_s, timings.compile_s) == (49.83, 23.40)
    assert timings.model_load_s == pytest.approx(1.820655)


def test_boot_ok_reason_names_the_ready_line():
    signals = parse_boot_log(h200_log("l8b_32k.log"))
    assert signals.reason.startswith("line 94: Starting vLLM server on http://0.0.0.0:8000")


def test_qwen32b_256k_fails_on_kv_cache_with_the_estimate():
    signals = parse_boot_log(h200_log("q32_256k.log"))
    assert signals.status is BootStatus.OOM_KV_CACHE
    assert signals.max_model_len == 262_144 and signals.max_num_batched_tokens == 8192
    assert signals.kv_cache_needed_gib == 64.0
    assert signals.available_kv_cache_gib == 62.71
    assert signals.estimated_max_model_len == 256_848
    assert signals.kv_cache_tokens is None  # the engine died before sizing the cache
    assert signals.memory.weights_gib == 61.28  # from "Model loading took", the breakdown never printed
    # the first of the two copies of the error decides, not the API server's RuntimeError after it
    assert signals.reason.startswith("line 56: ValueError: To serve at least one request")


def test_warnings_are_collected_without_their_prefix():
    warnings = parse_boot_log(h200_log("l8b_32k.log")).warnings
    assert warnings[0].startswith("Found ulimit of 20000")


@pytest.mark.parametrize("name", ["l8b_32k.log", "q32_256k.log"])
def test_served_model_is_read_from_the_args_line(name):
    assert served_model(h200_log(name)) == ("/models/llama8b" if name.startswith("l8b") else "/models/qwen32b")
