"""Every boot of the H100 landscape (tests/data/vllm-0.26.0-h100-landscape-8b: llama8b, 17 cells and 2 replicate
boots over batched tokens, KV dtype, eager or graphs, cold or warm compile caches) against what `memory_predict`
answers for its config before it runs: within 1% of the KV tokens the boot measured, and inside the answer's band.
The shipped corpus holds llama8b boots on this GPU, so this is the model on a shape it was calibrated on, over
configs that move its KV cache by 2x (fp8) and its activation by 8x (batched tokens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redline.engines.vllm import parse_boot_log
from redline.ops.predict.predict import memory_predict
from redline.ops.requests_predict import MemoryPredictRequest

ROOT = Path(__file__).resolve().parents[2]
CELLS = ROOT / "tests" / "data" / "vllm-0.26.0-h100-landscape-8b" / "landscape-8b" / "l8b-landscape-2" / "cells"
LLAMA8B = ROOT / "src" / "redline" / "data" / "boots" / "models" / "llama8b"
NAME = re.compile(r"mnbt(\d+)-kv(auto|fp8)-(eager|graphs)-flags[01](\.boot\d)?")


def _question(cell: str, compile_cache: str) -> MemoryPredictRequest:
    """The cell's memory knobs, from its name (`defaults`: vLLM's own: 8,192 batched tokens, CUDA graphs, KV auto);
    every cell ran at max_model_len 8,192, max_num_seqs 128, utilization 0.90."""
    found = NAME.fullmatch(cell)
    mnbt, kv, mode = (int(found[1]), found[2], found[3]) if found else (8192, "auto", "graphs")
    state = {"compile_cache": compile_cache} if mode == "graphs" else {}  # eager compiles nothing: its default
    return MemoryPredictRequest(
        model=str(LLAMA8B),
        gpu_name="NVIDIA H100 80GB HBM3",
        gpu_memory_gib=79.6,
        engine_version="0.26.0",
        max_model_len=8192,
        max_num_batched_tokens=mnbt,
        max_num_seqs=128,
        kv_cache_dtype=kv,
        enforce_eager=mode == "eager",
        **state,
    )


@pytest.mark.parametrize("cell", sorted(p.name for p in CELLS.iterdir()))
def test_each_boot_is_predicted_within_1pct_and_inside_its_band(cell: str, tmp_path: Path) -> None:
    boot = parse_boot_log((CELLS / cell / "boot.log").read_text())
    measured = boot.kv_cache_tokens
    assert measured and boot.compile_cache in {"cold", "warm", "unused"}
    said = memory_predict(tmp_path, _question(cell, boot.compile_cache), None)
    assert said.provenance == "predicted"
    assert abs(said.kv_cache_tokens - measured) / measured < 0.01, (cell, said.kv_cache_tokens, measured)
    assert said.kv_cache_tokens_low <= measured <= said.kv_cache_tokens_high


def test_the_landscape_has_every_cell_and_both_replicates() -> None:
    cells = {p.name for p in CELLS.iterdir()}
    assert len(cells) == 19 and {c for c in cells if ".boot" in c} == {
        "mnbt2048-kvfp8-graphs-flags0.boot2",
        "mnbt16384-kvfp8-graphs-flags0.boot2",
    }
