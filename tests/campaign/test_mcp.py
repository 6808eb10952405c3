"""The campaign tools through MCP against the fake engine: the ack gate, the dry run and job_cancel, each checked
where it counts (the job files, the target's folder, /proc)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from redline.ledger import campaign_file
from redline.ledger.campaign_file import cells_of, read_verdict
from redline.server.app import build_server
from tests.campaign.helpers import wait_until_gone
from tests.conftest import processes_naming
from tests.server.helpers import LLAMA8B, Env, call, call_error, fake_servers, write_env, write_targets

pytestmark = pytest.mark.anyio
CAMPAIGN = "campaigns/c1.yml"


@pytest.fixture
def env(tmp_path: Path) -> Env:
    made = write_env(tmp_path / "srv")
    model = made.workspace / "models" / "llama8b"  # under tmp_path, so every process it boots names tmp_path
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    return made


def spec(env: Env, **changes: Any) -> dict[str, Any]:
    return {
        "name": "c1",
        "target": "local",
        "model": str(env.workspace / "models" / "llama8b"),
        "base": {"max_model_len": 4096, "port": env.port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "warmup_requests": 2,
        "grid": {"max_num_batched_tokens": [2048, 8192]},
        **changes,
    }


def write(env: Env, **changes: Any) -> Path:
    path = env.workspace / CAMPAIGN
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec(env, **changes)))
    return path


def results(env: Env) -> Path:
    return env.workspace / "campaigns" / "c1"


def nothing_started(env: Env) -> None:
    assert not results(env).exists() and not (env.root / "target").exists()
    assert processes_naming(env.root) == [] and fake_servers(env.port) == []


async def jobs(client: Client) -> list[dict[str, Any]]:
    return (await call(client, "job_list"))["jobs"]


# ---- the ack gate and the dry run -----------------------------------------------------------------------------


@pytest.mark.parametrize("ack", [None, False, "yes", 1, "no"])
async def test_without_the_ack_nothing_is_queued_or_started(env: Env, ack: object) -> None:
    write(env)
    args = {} if ack is None else {"i_understand_this_submits_jobs": ack}
    async with Client(build_server(env.config)) as client:
        message = await call_error(client, "campaign_run", campaign=CAMPAIGN, wait_s=5, **args)
        assert await jobs(client) == []
    assert "i_understand_this_submits_jobs" in message
    nothing_started(env)


async def test_the_ack_is_checked_before_the_campaign_is_even_read(env: Env) -> None:
    async with Client(build_server(env.config)) as client:  # no such file: the gate answers first
        message = await call_error(client, "campaign_run", campaign="campaigns/missing.yml")
        assert await jobs(client) == []
    assert "pass i_understand_this_submits_jobs=true" in message


async def test_a_dry_run_over_mcp_lists_every_command_and_starts_nothing(env: Env) -> None:
    write(env)
    async with Client(build_server(env.config)) as client:
        dry = await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
        plan = await call(client, "campaign_plan", campaign=CAMPAIGN)
        assert await jobs(client) == []  # no job was queued
    assert dry["job_id"] is None and dry["done"] and "no job was queued" in dry["hint"]
    assert dry["result"]["dry_run"] and dry["result"]["plan"] == plan
    assert (plan["boots"], plan["benches"]) == (2, 4) and [c["name"] for c in plan["cells"]] == ["mnbt2048", "mnbt8192"]
    assert all(c["boot_command"][2] == "serve" and len(c["benches"]) == 2 for c in plan["cells"])
    nothing_started(env)


async def test_a_campaign_that_cannot_run_is_refused_before_a_job_is_queued(env: Env) -> None:
    write(env, target="gpu-1")
    async with Client(build_server(env.config)) as client:
        unknown = await call_error(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True)
        write(env, grid={"max_num_seqs": [2]})  # below the highest concurrency, set by the cell: refused at plan time
        gated = await call_error(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True)
        assert await jobs(client) == []
    assert "target: " in unknown and "gpu-1" in unknown
    assert "max_num_seqs 2 (set by the cell) is below the highest concurrency 4" in gated
    nothing_started(env)


# ---- cancel ----------------------------------------------------------------------------------------------------


async def _wait_for_bench(client: Client, job_id: str) -> dict[str, Any]:
    with anyio.fail_after(60):
        while True:
            job = await call(client, "job_status", job_id=job_id, wait_s=1)
            if "warming up" in job["message"]:
                return job
            assert not job["done"], job


async def test_job_cancel_of_a_running_campaign_leaves_no_server(env: Env) -> None:
    write_targets(env, FAKE_VLLM_BENCH_S="30")  # the warm-up hangs: the cell's server is up while the job runs
    write(env)
    async with Client(build_server(env.config)) as client:
        started = await call(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True, wait_s=0)
        job = await _wait_for_bench(client, started["job_id"])
        assert job["message"].startswith("cell 1 of 4 (mnbt2048)") and fake_servers(env.port)
        record = json.loads((env.config.state_dir / "jobs" / f"{job['job_id']}.json").read_text())
        assert [p["target"] for p in record["processes"]] == ["local"]  # the job knows the server it started
        cancelled = await call(client, "job_cancel", job_id=job["job_id"])
    assert cancelled["state"] == "cancelled"
    assert fake_servers(env.port) == [] and wait_until_gone(env.root) == []
    assert read_verdict(results(env), "mnbt2048") is None and cells_of(results(env)).server_files() == []


async def test_a_second_run_of_a_running_campaign_is_refused(env: Env) -> None:
    write_targets(env, FAKE_VLLM_BENCH_S="30")
    write(env)
    async with Client(build_server(env.config)) as client:
        started = await call(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True, wait_s=0)
        await _wait_for_bench(client, started["job_id"])
        busy = await call_error(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True)
        status = await call(client, "campaign_status", campaign=CAMPAIGN)
        await call(client, "job_cancel", job_id=started["job_id"])
    assert "is still running" in busy and started["job_id"] in busy
    assert f"job {started['job_id']} (campaign_run, target local)" in busy  # never "on ladder None" (issue 40)
    assert status["running"] == ["mnbt2048"] and "wait for its job" in status["next"]
    assert fake_servers(env.port) == [] and wait_until_gone(env.root) == []


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every parse of a campaign file from now on (ledger/campaign_file.py's one parser), by path."""
    reads: list[Path] = []
    parse = campaign_file._parse

    def counted(path: Path) -> Any:
        reads.append(path)
        return parse(path)

    monkeypatch.setattr(campaign_file, "_parse", counted)
    return reads


async def test_the_campaign_file_is_parsed_once_per_call_and_once_more_when_its_job_starts(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dry run reads it once; a run reads it once to refuse what it can before a job exists, and its job once at
    its start (the file may change between the call and the job: the job plans and checks what it reads then)."""
    write_targets(env, FAKE_VLLM_BENCH_S="30")
    path = write(env)
    reads = count_reads(monkeypatch)
    async with Client(build_server(env.config)) as client:
        await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
        assert reads == [path]
        started = await call(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True, wait_s=0)
        await _wait_for_bench(client, started["job_id"])
        await call(client, "job_cancel", job_id=started["job_id"])
    assert reads == [path] * 3
    assert fake_servers(env.port) == [] and wait_until_gone(env.root) == []


# ---- the server config's widening, and a results folder that leads out -----------------------------------------

SLEEP_MODE = "--enable-sleep-mode"  # a real vLLM option that is not a serving lever: only a widening admits it


async def test_a_flag_only_the_server_config_widens_is_refused_without_it_and_planned_with_it(tmp_path: Path) -> None:
    grid = {"extra_flags": [[], [SLEEP_MODE]]}
    narrow = write_env(tmp_path / "narrow")
    wide = write_env(tmp_path / "wide", widen={"vllm": {"flags": [SLEEP_MODE]}})
    for env in (narrow, wide):
        path = env.workspace / CAMPAIGN
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(spec(env, model=str(LLAMA8B), grid=grid)))
    async with Client(build_server(narrow.config)) as client:
        said = await call_error(client, "campaign_plan", campaign=CAMPAIGN)
        dry = await call_error(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
    assert (
        "cell 'flags1'" in said
        and SLEEP_MODE in said
        and "widen" in said
        and dry == said.replace("campaign_plan", "campaign_run")
    )
    async with Client(build_server(wide.config)) as client:
        plan = await call(client, "campaign_plan", campaign=CAMPAIGN)
    assert [c["widened"] for c in plan["cells"]] == [[], [f"flag {SLEEP_MODE} (enable_sleep_mode)"]]


async def test_a_results_folder_that_is_a_symlink_is_refused(env: Env, tmp_path: Path) -> None:
    write(env)
    outside = tmp_path / "outside"
    outside.mkdir()
    results(env).symlink_to(outside)
    async with Client(build_server(env.config)) as client:
        for tool in ("campaign_status", "campaign_report"):
            assert "is a symlink" in await call_error(client, tool, campaign=CAMPAIGN)
        said = await call_error(client, "campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True)
        assert await jobs(client) == []
    assert "is a symlink" in said and list(outside.iterdir()) == []
