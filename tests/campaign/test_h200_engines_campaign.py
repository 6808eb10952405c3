"""The real H200 campaign of vLLM against SGLang (tests/data/vllm-0.26.0-sglang-0.5.17-h200-campaign) read back:
each cell booted its own engine, both were benched by the one client, every figure in a verdict is what its own
boot log and bench files say, and the winner is what those figures decide."""

import json
import shutil
import statistics
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.engines import get_engine
from redline.ledger.campaign_file import read_campaign
from redline.models.serve import flag_value
from redline.ops.campaign import results as campaign
from redline.ops.campaign.report import campaign_report

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-sglang-0.5.17-h200-campaign"
CAMPAIGN = DATA / "engines.yml"
CELLS = DATA / "llama8b-h200-engines" / "cells"
EXAMPLE = Path(__file__).resolve().parents[2] / "skills" / "inference-tune-sweep" / "assets" / "campaign-engines.yml"
ENGINES = {"vllm": ("vllm", "0.26.0", "vllm"), "sglang": ("sglang", "0.5.17", "openai")}  # engine, version, backend
GPU_UUID = "GPU-87e77369-5345-4073-ed4b-79c80003dc9a"  # gpu.csv: nvidia-smi in the first call


def verdict(cell: str) -> dict:
    return YAML(typ="safe").load((CELLS / cell / "verdict.yml").read_text())


def bench(cell: str, c: int, t: int) -> dict:
    return json.loads((CELLS / cell / f"bench-c{c}-t{t}.json").read_text())


def test_the_campaign_that_ran_is_the_shipped_example_and_both_cells_booted_green_once() -> None:
    # the same campaign, read as redline reads it (the example says repeats: where the file that ran said trials:)
    assert read_campaign(CAMPAIGN) == read_campaign(EXAMPLE)
    status = campaign.campaign_status(CAMPAIGN)
    assert (status.total, status.done, status.green, status.red) == (2, 2, 2, 0)
    assert sorted(p.name for p in CELLS.iterdir()) == ["sglang", "vllm"]
    assert GPU_UUID in (DATA / "gpu.csv").read_text()


@pytest.mark.parametrize("cell", sorted(ENGINES))
def test_each_cell_booted_its_own_engine_and_was_benched_by_the_one_client(cell: str) -> None:
    engine, version, backend = ENGINES[cell]
    v = verdict(cell)
    ctx = v["context"]
    assert (ctx["engine"], ctx["engine_version"], ctx["bench_client"], ctx["bench_backend"]) == (
        engine,
        version,
        "vllm",
        backend,
    )
    assert v["commands"]["boot"][:3] == (
        ["vllm", "serve", "/models/llama8b"] if engine == "vllm" else ["sglang-python", "-m", "sglang.launch_server"]
    )
    for argv in [v["commands"]["warmup"], *v["commands"]["bench"]]:
        assert argv[:3] == ["vllm", "bench", "serve"] and flag_value(argv, "--backend") == backend
    # both engines' own prefix caches on (each one's default): matched, so no replay can fake a win
    assert ctx["serve"]["enable_prefix_caching"] is None and ctx["regime"] == {"cache": "warm", "graphs": "graphs"}
    assert not {"--disable-radix-cache", "--no-enable-prefix-caching"} & set(v["commands"]["boot"])
    assert ctx["gpu"] == {"name": "NVIDIA H200", "memory_gib": 140.4, "count": 1} and ctx["host"] == "vm"


@pytest.mark.parametrize("cell", sorted(ENGINES))
def test_a_verdict_holds_what_its_boot_log_says(cell: str) -> None:
    engine = get_engine(ENGINES[cell][0])
    recorded = verdict(cell)["boot"]["signals"]
    signals = engine.parse_boot_log((CELLS / cell / "boot.log").read_text())
    assert signals.status.value == recorded["status"] == "boot_ok"
    assert signals.kv_cache_tokens == recorded["kv_cache_tokens"]
    assert signals.max_model_len == recorded["max_model_len"] == 8192
    assert signals.memory.weights_gib == recorded["memory"]["weights_gib"]


def test_the_two_pools_are_what_each_engine_printed() -> None:
    vllm, sglang = verdict("vllm")["boot"]["signals"], verdict("sglang")["boot"]["signals"]
    assert (vllm["kv_cache_tokens"], vllm["available_kv_cache_gib"], vllm["engine_version"]) == (
        839_648,
        102.5,
        "0.26.0",
    )
    # "KV Cache is allocated. ... #tokens: 845633, K size: 51.61 GB, V size: 51.61 GB"; SGLang's log names no version
    assert (sglang["kv_cache_tokens"], sglang["available_kv_cache_gib"], sglang["engine_version"]) == (
        845_633,
        103.22,
        None,
    )
    assert sglang["max_num_batched_tokens"] == 8192  # SGLang's own chunked_prefill_size on the H200


@pytest.mark.parametrize("cell", sorted(ENGINES))
def test_every_mean_and_std_is_the_three_trials_bench_files(cell: str) -> None:
    engine = get_engine("vllm")  # the one bench client wrote every file
    for row in verdict(cell)["results"]:
        c = row["concurrency"]
        trials = [engine.parse_bench_result((CELLS / cell / f"bench-c{c}-t{t}.json").read_text()) for t in (1, 2, 3)]
        assert all(r.all_completed and r.max_concurrency == c for r in trials)
        tp = [r.output_throughput for r in trials]
        assert row["metrics"]["output_throughput"]["values"] == pytest.approx(tp)
        assert row["metrics"]["output_throughput"]["mean"] == pytest.approx(statistics.mean(tp))
        assert row["metrics"]["output_throughput"]["std"] == pytest.approx(statistics.stdev(tp))
        assert {bench(cell, c, t)["backend"] for t in (1, 2, 3)} == {ENGINES[cell][2]}


def test_vllm_won_beyond_the_noise_band_so_there_is_no_champion_and_the_note_names_the_engine() -> None:
    report = campaign.champion_select(CAMPAIGN)
    assert (report.baseline, report.engines, report.regime) == ("vllm", ["vllm", "sglang"], "warm/graphs")
    assert (report.champion, report.champion_engine, report.outcome, report.rigor) == (
        None,
        None,
        "no_improvement",
        "DRAFT",
    )
    assert "(vllm won: every sglang cell is worse than the baseline beyond the noise band)" in report.note
    vllm, sglang = report.ranked
    c64 = {cell: statistics.mean(bench(cell, 64, t)["output_throughput"] for t in (1, 2, 3)) for cell in ENGINES}
    assert (vllm.cell, vllm.at_concurrency, vllm.score) == ("vllm", 64, pytest.approx(c64["vllm"]))
    assert (sglang.cell, sglang.at_concurrency, sglang.score) == ("sglang", 64, pytest.approx(c64["sglang"]))
    assert round(c64["vllm"]) == 3345 and round(c64["sglang"]) == 3099
    assert sglang.outcome == "worse" and sglang.band_source == "trials"
    assert sglang.delta_pct == pytest.approx(-7.361, abs=1e-3)
    # Welch's test on the 3 benches a cell: real beyond t(0.025, df) x the standard error, 2.78% here
    assert sglang.noise_band_pct == pytest.approx(2.778, abs=1e-3) and sglang.noise.p_value < 0.05
    assert "worse by 7.36%" in sglang.why and sglang.noise.mde_pct > sglang.noise_band_pct


def test_at_one_request_the_engines_tie_and_the_gap_opens_with_the_batch() -> None:
    table = campaign.campaign_aggregate(CAMPAIGN)
    at = {(r.cell, r.concurrency): r.output_throughput for r in table.rows}
    gap = {c: at[("vllm", c)] / at[("sglang", c)] - 1 for c in (1, 16, 64)}
    assert abs(gap[1]) < 0.005 and 0.01 < gap[16] < 0.03 and 0.07 < gap[64] < 0.09


def test_the_report_names_both_engines_and_the_gpu(tmp_path: Path) -> None:
    shutil.copytree(DATA, tmp_path / "data")
    report = Path(campaign_report(tmp_path / "data" / "engines.yml").report).read_text()
    assert "- engine: vllm 0.26.0; sglang 0.5.17; bench client: vllm's, backend `openai`, `vllm`" in report
    assert "1 x NVIDIA H200 (140.4 GiB)" in report
