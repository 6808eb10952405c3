"""Issue 38, its findings re-run as the attacks they describe against the real MCP server (in-process and over stdio)
and the CLI: a flat 15 MB campaign file (item 2), a model_config_file over config.json's 1 MiB cap (item 3), and the
write-back given a prefix spelling of the champion's option, one of redline's records, or an anchored values file
(items 4, 5 and 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from redline.server.app import build_server
from tests.rigor.helpers import latency_champion
from tests.server.helpers import LLAMA8B, Env, call, call_error, init_args, write_env

pytestmark = pytest.mark.anyio
FLAT = "name: c1\ncells:\n" + "- 1\n" * 3_900_000  # 15.6 MB, one flat list: under the 16 MiB cap
CAMPAIGN = "campaigns/flat.yml"
READERS = ("campaign_status", "campaign_plan", "campaign_aggregate", "champion_select", "campaign_report")
BUDGET = "holds over 50,000 YAML nodes (values, lists and mappings)"
# A generous bound for a busy 2-core host (bench/hostile_inputs_rss.py measures it: well under a second idle); the
# issue's run took past 60 s and 2.8 GB at the CLI, past 10 s and 600 MB through the server
WITHIN_S = 5.0


def flat_campaign(env: Env) -> Path:
    path = env.workspace / CAMPAIGN
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FLAT)
    return path


def stdio(env: Env) -> StdioServerParameters:
    argv = [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


async def test_one_yaml_reader_a_flat_15_mb_campaign_is_refused_by_every_campaign_reader_at_once(env: Env) -> None:
    flat_campaign(env)
    async with Client(build_server(env.config)) as client:
        for tool in READERS:
            start = time.perf_counter()
            said = await call_error(client, tool, campaign=CAMPAIGN)
            assert time.perf_counter() - start < WITHIN_S, tool
            assert BUDGET in said and "is it the right file?" in said, (tool, said)
        await call(client, "job_list")


async def test_one_yaml_reader_a_flat_15_mb_campaign_over_stdio_and_at_the_cli(env: Env) -> None:
    path = flat_campaign(env)
    async with Client(stdio(env)) as client:
        start = time.perf_counter()
        said = await call_error(client, "campaign_status", campaign=CAMPAIGN)
        assert time.perf_counter() - start < WITHIN_S and BUDGET in said
        await call(client, "job_list")
    small = path.with_name("small.yml")
    small.write_text("name: small\ncells: [1]\n")
    took = {}
    for file in (small, path):  # the interpreter's own start, then the flat file: the difference is the refusal
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "redline", "campaign", "status", "--campaign", str(file)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        took[file] = time.perf_counter() - start
    assert took[path] - took[small] < WITHIN_S, took
    assert done.returncode != 0 and BUDGET in done.stderr, done.stderr[-500:]


def big_config(env: Env, mib: int) -> str:
    """The llama8b config.json padded past config.json's 1 MiB cap: valid JSON, `mib` MiB."""
    data = json.loads((LLAMA8B / "config.json").read_text()) | {"padding": "x" * (mib << 20)}
    (env.workspace / "big-config.json").write_text(json.dumps(data))
    return "big-config.json"


async def test_model_config_file_is_read_with_config_json_s_own_cap_by_every_tool_that_takes_it(env: Env) -> None:
    name = big_config(env, 48)
    predict = {"model": "llama8b", "max_model_len": 4096, "gpu_name": "NVIDIA H200", "gpu_memory_gib": 139.8}
    over = "model_config_file 'big-config.json' (in the workspace) is 48 MiB, over the 1 MiB redline reads"
    async with Client(build_server(env.config)) as client:
        start = time.perf_counter()
        assert over in await call_error(client, "memory_predict", model_config_file=name, **predict)
        assert time.perf_counter() - start < 1.0  # refused from its size: nothing read
        args = init_args(model_path="/nowhere/llama8b", model_config_file=name)
        assert over in await call_error(client, "ladder_init", **args)
        assert not (env.workspace / "ladders" / "l8b.yml").exists()
    async with Client(stdio(env)) as client:
        assert over in await call_error(client, "memory_predict", model_config_file=name, **predict)
    done = subprocess.run(
        [sys.executable, "-m", "redline", "predict", "--model", "llama8b", "--model-config-file"]
        + [
            str(env.workspace / name),
            "--max-model-len",
            "4096",
            "--gpu-name",
            "NVIDIA H200",
            "--gpu-memory-gib",
            "139.8",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "is 48 MiB, over the 1 MiB redline reads" in done.stderr, done.stderr[-500:]
    # a real config.json under the cap still reads, by file
    (env.workspace / "config.json").write_text((LLAMA8B / "config.json").read_text())
    async with Client(build_server(env.config)) as client:
        answer = await call(client, "memory_predict", model_config_file="config.json", **predict)
        assert answer["kv_cache_tokens"] > 0


# ---- items 4, 5 and 8: the write-back, through the MCP server ----------------------------------------------------------

AB, CHAMPION = "l8b-mnbt", "mnbt8192"
APPLY = {"ab": AB, "values": "deploy/values.yaml", "baseline": "llama8b-prod", "dry_run": True}


def closed_ab(env: Env) -> Path:
    """The real H200 A/B (judged on latency: mnbt8192 a VERDICT's champion) in the server's workspace, closed."""
    from redline.ops.evidence.known_good import known_good_record
    from redline.ops.requests_evidence import KnownGoodRecordRequest

    latency_champion(env.workspace)
    known_good_record(env.workspace, KnownGoodRecordRequest(from_ab=AB, arm=CHAMPION, why="the A/B's champion"))
    (env.workspace / "deploy").mkdir()
    return env.workspace / "deploy" / "values.yaml"


async def test_write_back_spellings_records_and_names_through_the_mcp_server(env: Env) -> None:
    values = closed_ab(env)
    values.write_text("vllm:\n  extraArgs:\n    - --max-num-batched-tokens=2048\n    - --max-num-batched=2048\n")
    async with Client(build_server(env.config)) as client:
        dry = await call(client, "champion_apply", **APPLY)
        assert "- --max-num-batched=2048 (item 1)" in dry["changes"]
        go = {"dry_run": False, "expect": dry["diff_id"], "i_understand_this_writes_the_deploy": True}
        await call(client, "champion_apply", **(APPLY | go))
        assert "2048" not in values.read_text()
        baselines = env.workspace / "baselines.yml"
        before = baselines.read_bytes()
        said = await call_error(client, "champion_apply", **(APPLY | {"values": "baselines.yml"}))
        assert "values: 'baselines.yml' is the recorded baselines (baselines.yml), one of redline's own records" in said
        trial = f"ab/{AB}/trials/{CHAMPION}-1/trial.yml"
        said = await call_error(client, "champion_apply", **(APPLY | {"values": trial}))
        assert "is an A/B's spec or its trial records (ab/), one of redline's own records" in said
        assert baselines.read_bytes() == before
        values.write_text("common: &args\n  - --enforce-eager\nvllm:\n  extraArgs: *args\n")
        said = await call_error(client, "champion_apply", **APPLY)
        assert "deploy/values.yaml (the deploy's values file) uses a YAML alias (*args)" in said
        assert str(env.workspace) not in said and "redline's files" not in said


# ---- item 9: memory_predict reads a model folder only where the server config allows -----------------------------------


async def test_models_from_memory_predict_reads_no_folder_outside_the_workspace_and_models_from(tmp_path: Path) -> None:
    """The issue's probe: memory_predict's `model` read a config.json from any folder of the server's host, an oracle
    of what exists there and its shape. Outside the workspace and `models_from:` it is refused in the same words
    whether the folder exists, holds a config.json, or not; a link out of the workspace likewise."""
    allowed, outside = tmp_path / "models", tmp_path / "private"
    for folder in (allowed / "llama8b", outside / "llama8b"):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text((LLAMA8B / "config.json").read_text())
    env = write_env(tmp_path / "srv", models_from=[str(allowed)])
    (env.workspace / "link").symlink_to(outside / "llama8b")
    asked = {"max_model_len": 4096, "gpu_name": "NVIDIA H200", "gpu_memory_gib": 139.8}
    refusals = []
    async with Client(build_server(env.config)) as client:
        for model in (outside / "llama8b", outside / "nothing-here", allowed / ".." / "private" / "llama8b"):
            said = await call_error(client, "memory_predict", model=str(model), **asked)
            refusals.append(said.replace(str(model), "MODEL"))
        said = await call_error(client, "memory_predict", model=str(env.workspace / "link"), **asked)
        refusals.append(said.replace(str(env.workspace / "link"), "MODEL"))
        answer = await call(client, "memory_predict", model=str(allowed / "llama8b"), **asked)
        assert answer["kv_cache_tokens"] > 0
    assert len(set(refusals)) == 1, refusals  # one answer, whatever is (or is not) there: no oracle
    assert "is outside the workspace and every folder the server config's models_from: names" in refusals[0]
    async with Client(stdio(env)) as client:
        said = await call_error(client, "memory_predict", model=str(outside / "llama8b"), **asked)
        assert said.replace(str(outside / "llama8b"), "MODEL") == refusals[0]
