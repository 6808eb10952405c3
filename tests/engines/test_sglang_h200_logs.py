"""SGLang 0.5.17's real boot logs from the H200 (tests/data/sglang-0.5.17-h200) read by the SGLang reader: the
status and every figure are what the log's own lines say."""

import re
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.models import BootStatus
from tests.engines import sglang_excerpts as x

DATA = Path(__file__).resolve().parent.parent / "data" / "sglang-0.5.17-h200"
SGLANG = get_engine("sglang")


def read(name: str):
    return SGLANG.parse_boot_log((DATA / f"{name}.log").read_text())


def test_a_good_boot_with_graphs_reads_its_pool_weights_and_graph_memory() -> None:
    s = read("good-boot")
    assert s.status is BootStatus.BOOT_OK and "fired up and ready to roll" in s.reason
    assert s.kv_cache_tokens == 906_067  # `KV Cache is allocated. ... #tokens: 906067` and max_total_num_tokens=906067
    assert s.available_kv_cache_gib == pytest.approx(55.30 + 55.30)  # K size + V size
    assert (s.max_model_len, s.max_num_batched_tokens) == (8192, 8192)  # from server_args=ServerArgs(...)
    assert s.memory.weights_gib == 15.02 and s.timings.model_load_s == 0.23
    assert s.memory.cudagraph_gib == pytest.approx(1.47 + 0.21)  # the prefill and the decode capture


def test_the_stop_after_the_ready_line_does_not_turn_a_good_boot_red() -> None:
    text = (DATA / "good-boot.log").read_text()
    assert "crashed with exit code -15" in text and "It usually means one child failed" in text
    assert read("good-boot").status is BootStatus.BOOT_OK


def test_a_pool_smaller_than_the_context_still_boots_and_says_so_in_its_figures() -> None:
    s = read("pool-smaller-than-context")
    assert s.status is BootStatus.BOOT_OK
    assert (s.max_model_len, s.kv_cache_tokens) == (131_072, 104_438)
    assert s.kv_cache_tokens < s.max_model_len  # what only a smoke test can refute, and the ladder's next candidate
    assert s.available_kv_cache_gib == pytest.approx(6.37 + 6.37)


def test_too_small_a_mem_fraction_is_oom_kv_cache_with_sglang_s_own_advice() -> None:
    s = read("mem-fraction-too-small")
    assert s.status is BootStatus.OOM_KV_CACHE
    assert "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.1" in s.reason
    assert "Raise --mem-fraction-static above 0.109" in s.reason
    assert s.kv_cache_tokens is None and s.memory.weights_gib == 15.02


def test_a_context_past_the_model_s_limit_is_refused_as_crash_config() -> None:
    s = read("context-refused")
    assert s.status is BootStatus.CRASH_CONFIG
    assert "context_length (262144) is greater than the derived context_length (131072)" in s.reason
    assert s.kv_cache_tokens is None


@pytest.mark.parametrize(
    "name", ["good-boot", "pool-smaller-than-context", "mem-fraction-too-small", "context-refused"]
)
def test_every_log_is_recognised_as_sglang_s_and_its_command_is_recorded(name: str) -> None:
    assert read(name).engine == "sglang"
    command = (DATA / f"{name}.cmd").read_text()
    assert "sglang-server --model-path /models/llama8b --load-format dummy" in command


def _shape(line: str) -> str:
    """A log line without its time stamp, its numbers and its pids: what SGLang's f-string fixes."""
    return re.sub(r"\d+(\.\d+)?", "N", line.split("] ", 1)[-1])


EXCERPTS = [
    x.kv_line(1, 1.0, 1.0),
    x.pool_end(),
    x.scheduler(1),
    x.serving(),
    x.head().splitlines(keepends=True)[-3],  # Init torch distributed ends
    x.head().splitlines(keepends=True)[-2],  # Load weight begin
    x.scheduler_failure(x.NO_KV_MEMORY).splitlines()[-1],  # the parent's sigquit
]


@pytest.mark.parametrize("excerpt", EXCERPTS, ids=lambda e: _shape(e)[:40])
def test_the_excerpts_other_tests_use_have_the_real_logs_shape(excerpt: str) -> None:
    real = {_shape(line) for name in DATA.glob("*.log") for line in name.read_text().splitlines()}
    for line in excerpt.strip("\n").splitlines():
        assert _shape(line) in real, line
