"""`redline predict` and memory_predict take the torch.compile cache the boot will find (issue 42, item 4): cold by
default, as a fresh deployment boots, or warm; an eager config compiles nothing. Each answer says its state."""

from __future__ import annotations

import json

import pytest

from redline.cli import main
from tests.conftest import H200

LLAMA8B = H200 / "models" / "llama8b"
ASK = [
    *("predict", "--model", str(LLAMA8B), "--gpu-name", "NVIDIA H200", "--gpu-memory-gib", "140.4"),
    *("--engine-version", "0.26.0", "--max-model-len", "8192", "--max-num-batched-tokens", "8192", "--json"),
]


def predicted(capsys: pytest.CaptureFixture[str], *more: str) -> dict:
    capsys.readouterr()
    assert main([*ASK, *more]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_graph_mode_boot_is_predicted_cold_unless_asked_warm(capsys: pytest.CaptureFixture[str]) -> None:
    cold, warm = predicted(capsys), predicted(capsys, "--compile-cache", "warm")
    assert (cold["compile_cache"], warm["compile_cache"]) == ("cold", "warm")
    assert cold["provenance"] == warm["provenance"] == "predicted"
    assert cold["kv_cache_tokens"] < warm["kv_cache_tokens"]  # a cold compile's spike, counted in vLLM's profile
    assert predicted(capsys, "--compile-cache", "cold")["kv_cache_tokens"] == cold["kv_cache_tokens"]


def test_an_eager_boot_compiles_nothing_whatever_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    cold = predicted(capsys, "--enforce-eager")
    warm = predicted(capsys, "--enforce-eager", "--compile-cache", "warm")
    assert cold["compile_cache"] == warm["compile_cache"] == "unused"
    assert cold["kv_cache_tokens"] == warm["kv_cache_tokens"]


def test_a_state_that_is_not_cold_or_warm_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*ASK, "--compile-cache", "lukewarm"])
    assert exited.value.code == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--compile-cache" in said and "'cold' or 'warm'" in said
