"""`redline parse-log`: the JSON contract, the summary, and one-line errors, through the real console script."""

import json
import subprocess
import sys

import pytest

from tests.conftest import H200

KEYS = [
    "engine",
    "engine_version",
    "status",
    "reason",
    "max_model_len",
    "max_num_batched_tokens",
    "available_kv_cache_gib",
    "kv_cache_tokens",
    "max_concurrency",
    "max_concurrency_tokens",
    "kv_cache_needed_gib",
    "estimated_max_model_len",
    "memory",
    "timings",
    "warnings",
    "load_format",
    "model_load",
    "compile_cache",
]


def redline(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=60)


def test_json_has_exactly_the_contract_keys():
    result = redline("parse-log", str(H200 / "q32_256k.log"), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == KEYS
    assert set(data["memory"]) == {
        "weights_gib",
        "peak_activation_gib",
        "non_torch_gib",
        "cudagraph_gib",
        "cudagraph_estimate_gib",  # vLLM's own graph-pool line, where a release prints it
        "device_total_gib",
        "requested_gib",
    }
    assert set(data["timings"]) == {"init_engine_s", "compile_s", "model_load_s"}
    assert data["status"] == "oom_kv_cache" and data["estimated_max_model_len"] == 256848
    assert data["kv_cache_tokens"] is None


def test_summary_is_readable():
    result = redline("parse-log", str(H200 / "q32_128k.log"))
    assert result.returncode == 0
    assert "boot_ok" in result.stdout and "256,848 tokens" in result.stdout and "1.96x" in result.stdout
    assert "torch.compile cache cold" in result.stdout


@pytest.mark.parametrize(
    ("path", "message"),
    [("does/not/exist.log", "no such file"), ("tests", "is a folder"), ("pyproject.toml", "not a vLLM boot log")],
)
def test_bad_paths_get_one_line_and_exit_2(path, message):
    result = redline("parse-log", path, "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_line_numbers_count_lone_carriage_returns_as_the_file_does():
    # a real H200 boot written by redline: progress bars end lines with a lone \r
    log = H200.parent / "vllm-0.26.0-h200-ladder" / "qwen32b" / "ladder.runs" / "rung-002" / "boot.log"
    assert b"\r" in log.read_bytes()
    data = json.loads(redline("parse-log", str(log), "--json").stdout)
    assert data["reason"].startswith("line 46: Starting vLLM server")


def test_the_engine_is_chosen_by_name_and_an_unknown_one_is_a_usage_error():
    named = redline("parse-log", str(H200 / "q32_128k.log"), "--engine", "vllm", "--json")
    assert named.returncode == 0 and json.loads(named.stdout)["status"] == "boot_ok"
    unknown = redline("parse-log", str(H200 / "q32_128k.log"), "--engine", "nosuch")
    assert unknown.returncode == 2 and "--engine" in unknown.stderr and "nosuch" in unknown.stderr
