"""The H200 landscape recorded so far (tests/data/vllm-0.26.0-h200-landscape) read back: every figure in a verdict is
what its own boot log and bench files say, every bench ran in the cell's one resident client with prefix caching off,
and the campaign resumes after the cells it holds (the driver restores from here on a fresh machine)."""

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.ops.campaign import results as campaign

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-landscape"
CAMPAIGN = DATA / "landscape-h200" / "campaign.yml"
CELLS_DIR = DATA / "landscape-h200" / "l8b-landscape" / "cells"
CELLS = sorted(p.name for p in CELLS_DIR.iterdir())
VLLM = get_engine("vllm")


def verdict(cell: str) -> dict:
    return YAML(typ="safe").load((CELLS_DIR / cell / "verdict.yml").read_text())


def test_the_grid_is_twelve_cells_and_resumes_after_the_green_ones_recorded() -> None:
    status = campaign.campaign_status(CAMPAIGN)
    assert (status.total, status.done, status.green) == (12, len(CELLS), len(CELLS)) and len(CELLS) >= 4
    pending = [c.cell for c in status.cells if c.state == "pending"]
    assert len(pending) == 12 - len(CELLS) and pending[0] in (status.next or "")


@pytest.mark.parametrize("cell", CELLS)
def test_a_cell_holds_what_its_boot_log_and_bench_files_say(cell: str) -> None:
    recorded = verdict(cell)
    signals = VLLM.parse_boot_log((CELLS_DIR / cell / "boot.log").read_text())
    assert signals.kv_cache_tokens == recorded["boot"]["signals"]["kv_cache_tokens"]
    assert signals.max_num_batched_tokens == recorded["levers"]["max_num_batched_tokens"]
    fp8 = recorded["levers"]["kv_cache_dtype"] == "fp8"
    assert signals.kv_cache_tokens > 1_800_000 if fp8 else 900_000 < signals.kv_cache_tokens < 910_000  # 1 B vs 2 B
    assert [r["concurrency"] for r in recorded["results"]] == [16, 64, 128]
    for row in recorded["results"]:
        result = VLLM.parse_bench_result((CELLS_DIR / cell / f"bench-c{row['concurrency']}.json").read_text())
        assert result.all_completed and result.max_concurrency == row["concurrency"]
        assert row["metrics"]["output_throughput"]["mean"] == pytest.approx(result.output_throughput)


@pytest.mark.parametrize("cell", CELLS)
def test_every_bench_of_a_cell_ran_in_its_one_resident_client_with_no_cache_to_hit(cell: str) -> None:
    trials = [t for r in verdict(cell)["results"] for t in r["trials"]]
    clients = {t["client"] for t in trials}
    assert len(clients) == 1 and clients.pop().startswith("resident vLLM bench client 0.26.0 (imported once")
    checks = [c for t in trials for c in t["checks"] if c["check"] == "prefix_cache"]
    assert [c["said"] for c in checks] == ["no prompt token was looked up in the prefix cache"] * 3
