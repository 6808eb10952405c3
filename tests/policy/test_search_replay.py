"""bench/search_replay.py still runs (it once stopped on an import nobody ran): redline's search, random search and
TPE replayed over every shipped landscape at every budget, on two seeds (its smallest case); and a landscape is read
generically: a campaign folder still being recorded replays the cells it has, a cell booted twice measures the band,
and a scenario it was not benched at is refused naming the benches it has."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "bench" / "search_replay.py"
LANDSCAPE = ROOT / "tests" / "data" / "vllm-0.26.0-h200-landscape" / "landscape-h200"


def replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPLAY), "--seeds", "2", *args], capture_output=True, text=True)


def figures(*args: str) -> list[dict[str, Any]]:
    done = replay("--json", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_replay_runs_every_method_over_every_shipped_landscape_at_every_budget() -> None:
    results = figures()
    assert {(r["path"], r["scenario"]) for r in results} >= {
        ("tests/data/vllm-0.26.0-h200-campaign/l8b-h200.yml", "c=128 output_throughput (higher better)"),
        ("tests/data/vllm-0.26.0-h200-landscape/landscape-h200/campaign.yml", "c=16 median_ttft_ms (lower better)"),
    }
    for r in results:
        assert set(r["methods"]) == {"redline", "random", "tpe"}
        for m in r["methods"].values():
            assert len(m["median_gap_pct"]) == len(m["worst_gap_pct"]) == r["cells"]
            assert all(g is None or 0 <= g <= w for g, w in zip(m["median_gap_pct"], m["worst_gap_pct"], strict=True))
            assert m["to_band_worst"] is None or 1 <= m["to_band_median"] <= m["to_band_worst"] <= r["cells"]
        # at the grid's size every blind method booted every cell, and got the same answers: the same champion
        assert r["methods"]["random"]["median_gap_pct"][-1] == r["methods"]["tpe"]["median_gap_pct"][-1]
        assert r["methods"]["redline"]["stops_median"] is not None


def test_the_table_says_each_method_s_gaps_and_boots_to_the_band() -> None:
    done = replay("--methods", "redline,random")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| boots | redline | random |" in done.stdout and "| to the band (median / worst) |" in done.stdout
    assert "band 27.3%, measured: the boot-to-boot spread" in done.stdout  # the H200 search's five boots again
    assert "redline's own stop rules: after" in done.stdout


def _partial(tmp_path: Path) -> Path:
    """The 12-cell landscape as a run still recording it: 8 cells, one of them booted twice."""
    copy = tmp_path / "landscape"
    shutil.copytree(LANDSCAPE, copy)
    cells = copy / "l8b-landscape" / "cells"
    for name in (
        "mnbt16384-seqs128-kvauto",
        "mnbt16384-seqs128-kvfp8",
        "mnbt16384-seqs256-kvauto",
        "mnbt1024-seqs128-kvfp8",
    ):
        shutil.rmtree(cells / name)
    again = cells / "mnbt4096-seqs256-kvauto.boot2"
    shutil.copytree(cells / "mnbt4096-seqs256-kvauto", again)
    text = (again / "verdict.yml").read_text()
    text = text.replace("cell: mnbt4096-seqs256-kvauto\n", "cell: mnbt4096-seqs256-kvauto\nreplicate: 2\n")
    (again / "verdict.yml").write_text(text.replace("mean: 3273.715191924267", "mean: 3073.715191924267", 1))
    return copy / "campaign.yml"


def test_a_landscape_still_being_recorded_replays_the_cells_it_has_at_each_scenario(tmp_path: Path) -> None:
    campaign = str(_partial(tmp_path))
    throughput, latency = figures(
        "--landscape", campaign, "--scenario", "128:output_throughput", "--scenario", "16:median_ttft_ms"
    )
    assert (throughput["cells"], throughput["grid"]) == (8, 12)
    assert "a spread of 4.5% (cv, 1 df)" in throughput["band"]  # 3,274 and 3,074, booted twice: the band measured
    # mnbt4096-seqs256-kvauto was the best at 3,274; its two boots' mean (3,174) is under mnbt16384-seqs256-kvfp8's
    assert throughput["best"]["cell"] == "mnbt16384-seqs256-kvfp8"
    assert latency["scenario"] == "c=16 median_ttft_ms (lower better)" and latency["best"]["score"] > 0
    assert len(latency["methods"]["tpe"]["median_gap_pct"]) == 8


def test_a_scenario_the_landscape_was_not_benched_at_is_refused_naming_its_benches(tmp_path: Path) -> None:
    campaign = str(LANDSCAPE / "campaign.yml")
    done = replay("--landscape", campaign, "--scenario", "long:4:median_ttft_ms")
    assert done.returncode != 0 and "no cell was benched at long c=4" in done.stderr and "128, 16, 64" in done.stderr
    done = replay("--landscape", campaign, "--scenario", "16:ttft")
    assert done.returncode != 0 and "no metric 'ttft'" in done.stderr


def _two_workloads(tmp_path: Path) -> Path:
    """The 12-cell landscape as a campaign of two named workloads, each at its own concurrency (as issue 42's 8B
    landscape is): its c=16 benches become workload `short`'s, its c=128 benches `busy`'s (c=64 dropped)."""
    copy = tmp_path / "landscape"
    shutil.copytree(LANDSCAPE, copy)
    yaml = YAML()
    campaign = yaml.load((copy / "campaign.yml").read_text())
    shape = dict(campaign.pop("workload"))
    campaign["workloads"] = {"short": {**shape, "concurrencies": [16]}, "busy": {**shape, "concurrencies": [128]}}
    del campaign["concurrencies"]
    buf = io.StringIO()
    yaml.dump(campaign, buf)
    (copy / "campaign.yml").write_text(buf.getvalue())
    for path in (copy / "l8b-landscape" / "cells").glob("*/verdict.yml"):
        verdict = yaml.load(path.read_text())
        named = {16: "short", 128: "busy"}
        verdict["results"] = [r for r in verdict["results"] if r["concurrency"] in named]
        for r in verdict["results"]:
            r["workload"] = named[r["concurrency"]]
        verdict["workloads"] = {w: {**verdict["context"]["workload"], "name": w} for w in named.values()}
        buf = io.StringIO()
        yaml.dump(verdict, buf)
        path.write_text(buf.getvalue())
    return copy / "campaign.yml"


def test_a_landscape_of_named_workloads_is_scored_on_the_workload_its_scenario_names(tmp_path: Path) -> None:
    campaign = str(_two_workloads(tmp_path))
    busy, short = figures(
        "--landscape", campaign, "--scenario", "busy:128:output_throughput", "--scenario", "short:16:median_ttft_ms"
    )
    assert busy["scenario"] == "busy c=128 output_throughput (higher better)"
    assert busy["best"] == {"cell": "mnbt4096-seqs256-kvauto", "score": 3273.715191924267}  # the c=128 bench's
    assert short["best"]["cell"] == "mnbt1024-seqs256-kvauto" and short["best"]["score"] < 100  # c=16's TTFT
    done = replay("--landscape", campaign, "--scenario", "busy:16:output_throughput")
    assert done.returncode != 0 and "busy:128, short:16" in done.stderr  # each workload benched at its own load
