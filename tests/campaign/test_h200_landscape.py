"""The H200 landscape (tests/data/vllm-0.26.0-h200-landscape) read back: the 12-cell grid and the real search over
the same space. Every figure in a verdict is what its own boot log and bench files say, every bench ran in the
cell's one resident client with prefix caching off; the search booted at most half the grid, its log and
champion_select agree on what it measured, and its champion is inside the noise band of the grid's best."""

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.ledger.search_file import read_search_log
from redline.ops.campaign import results as campaign

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-landscape"
CAMPAIGN = DATA / "landscape-h200" / "campaign.yml"
SEARCH = DATA / "landscape-h200-search" / "campaign.yml"
SEARCHED = DATA / "landscape-h200-search" / "l8b-landscape-search"
GRID_DIR = DATA / "landscape-h200" / "l8b-landscape" / "cells"
CELLS = [(d.parent.parent.name, d.name) for top in (GRID_DIR, SEARCHED / "cells") for d in sorted(top.iterdir())]
VLLM = get_engine("vllm")


def verdict(run: str, cell: str) -> dict:
    return YAML(typ="safe").load((DATA.glob(f"*/{run}/cells/{cell}/verdict.yml").__next__()).read_text())


def test_the_grid_is_twelve_green_cells_and_the_search_booted_at_most_half_of_them() -> None:
    grid, searched = campaign.campaign_status(CAMPAIGN), campaign.campaign_status(SEARCH)
    assert (grid.total, grid.done, grid.green) == (12, 12, 12)
    assert searched.total == 12 and searched.done == searched.green <= 6


def test_the_search_log_names_each_cell_it_booted_with_the_score_champion_select_gives_it() -> None:
    log = read_search_log(SEARCHED)
    report = campaign.champion_select(SEARCH)
    scores = {r.cell: r.score for r in report.ranked}
    booted = [s for s in log.steps if s.cell is not None] if log else []
    assert log and log.stopped and log.steps[-1].cell is None and log.stopped == log.steps[-1].why
    assert {s.cell for s in booted} == {c.cell for c in campaign.campaign_status(SEARCH).cells if c.state == "green"}
    assert {s.cell: s.measured for s in booted} == pytest.approx(scores)
    assert report.champion == max(scores, key=lambda c: scores[c] or 0)


def test_the_search_s_champion_is_inside_the_noise_band_of_the_grid_s_best() -> None:
    grid, search = campaign.champion_select(CAMPAIGN), campaign.champion_select(SEARCH)
    best = next(r for r in grid.ranked if r.cell == grid.champion)
    found = next(r for r in search.ranked if r.cell == search.champion)
    assert best.score and found.score and best.noise_band_pct
    assert found.score >= best.score * (1 - best.noise_band_pct / 100)


@pytest.mark.parametrize(("run", "cell"), CELLS)
def test_a_cell_holds_what_its_boot_log_and_bench_files_say(run: str, cell: str) -> None:
    recorded = verdict(run, cell)
    where = next(DATA.glob(f"*/{run}/cells/{cell}"))
    signals = VLLM.parse_boot_log((where / "boot.log").read_text())
    assert signals.kv_cache_tokens == recorded["boot"]["signals"]["kv_cache_tokens"]
    assert signals.max_num_batched_tokens == recorded["levers"]["max_num_batched_tokens"]
    bf16 = VLLM.parse_boot_log((GRID_DIR / cell.replace("kvfp8", "kvauto") / "boot.log").read_text()).kv_cache_tokens
    assert bf16 and 880_000 < bf16 < 910_000  # fewer as max_num_batched_tokens raises the activation peak
    fp8 = recorded["levers"]["kv_cache_dtype"] == "fp8"
    assert signals.kv_cache_tokens == pytest.approx(2 * bf16 if fp8 else bf16, rel=0.001)  # 1 B a value against 2 B
    assert [r["concurrency"] for r in recorded["results"]] == [16, 64, 128]
    for row in recorded["results"]:
        result = VLLM.parse_bench_result((where / f"bench-c{row['concurrency']}.json").read_text())
        assert result.all_completed and result.max_concurrency == row["concurrency"]
        assert row["metrics"]["output_throughput"]["mean"] == pytest.approx(result.output_throughput)


@pytest.mark.parametrize(("run", "cell"), CELLS)
def test_every_bench_of_a_cell_ran_in_its_one_resident_client_with_no_cache_to_hit(run: str, cell: str) -> None:
    trials = [t for r in verdict(run, cell)["results"] for t in r["trials"]]
    clients = {t["client"] for t in trials}
    assert len(clients) == 1 and clients.pop().startswith("resident vLLM bench client 0.26.0 (imported once")
    checks = [c for t in trials for c in t["checks"] if c["check"] == "prefix_cache"]
    assert [c["said"] for c in checks] == ["no prompt token was looked up in the prefix cache"] * 3
