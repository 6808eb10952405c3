"""The real H200 campaign (tests/data/vllm-0.26.0-h200-campaign) read back: every figure in a verdict
is what its own boot log and bench files say, and the champion is what those figures decide."""

import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.ops.campaign import results as campaign
from redline.ops.campaign.report import campaign_report

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-campaign"
CAMPAIGN = DATA / "l8b-h200.yml"
CELLS = sorted(p.name for p in (DATA / "l8b-h200" / "cells").iterdir())
VLLM = get_engine("vllm")


def verdict(cell: str) -> dict:
    return YAML(typ="safe").load((DATA / "l8b-h200" / "cells" / cell / "verdict.yml").read_text())


def test_six_cells_each_one_green_boot() -> None:
    status = campaign.campaign_status(CAMPAIGN)
    assert (status.total, status.done, status.green, status.red) == (6, 6, 6, 0)
    assert len(CELLS) == 6


@pytest.mark.parametrize("cell", CELLS)
def test_a_verdict_holds_what_its_boot_log_says(cell: str) -> None:
    recorded = verdict(cell)["boot"]["signals"]
    signals = VLLM.parse_boot_log((DATA / "l8b-h200" / "cells" / cell / "boot.log").read_text())
    assert signals.status.value == recorded["status"] == "boot_ok"
    assert signals.kv_cache_tokens == recorded["kv_cache_tokens"]
    assert signals.engine_version == recorded["engine_version"] == "0.26.0"
    assert signals.max_num_batched_tokens == verdict(cell)["levers"]["max_num_batched_tokens"]


@pytest.mark.parametrize("cell", CELLS)
def test_a_verdict_holds_what_its_bench_files_say(cell: str) -> None:
    for row in verdict(cell)["results"]:
        c = row["concurrency"]
        result = VLLM.parse_bench_result((DATA / "l8b-h200" / "cells" / cell / f"bench-c{c}.json").read_text())
        assert result.all_completed and result.max_concurrency == c
        assert row["metrics"]["output_throughput"]["mean"] == pytest.approx(result.output_throughput)
        assert row["metrics"]["median_tpot_ms"]["mean"] == pytest.approx(result.median_tpot_ms)


def test_the_aggregate_and_the_champion_come_from_the_figures() -> None:
    table = campaign.campaign_aggregate(CAMPAIGN)
    assert {row.cell for row in table.rows} == set(CELLS)
    report = campaign.champion_select(CAMPAIGN)
    assert report.baseline == "mnbt8192-seqs128" and report.rigor == "DRAFT"
    assert report.champion is None and report.outcome == "no_improvement"
    assert all(abs(r.delta_pct) < 3.0 for r in report.ranked if r.delta_pct is not None)


def test_the_report_plots_one_series_per_cell(tmp_path: Path) -> None:
    shutil.copytree(DATA, tmp_path / "data")
    report = campaign_report(tmp_path / "data" / "l8b-h200.yml")
    results = tmp_path / "data" / "l8b-h200"
    assert (results / "report.md").is_file()
    assert all((results / p.file).is_file() for p in report.plots)
    throughput = next(p for p in report.plots if p.name == "throughput")
    assert {s.label for s in throughput.series} == set(CELLS)
    assert all(s.x == [8.0, 32.0, 128.0] for s in throughput.series)
