"""A whole redline climb through MCP calls alone, against the fake vLLM; and a server killed mid-boot."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from redline.server.app import build_server
from tests.server.helpers import Env, call, fake_servers, new_ladder, write_targets

pytestmark = pytest.mark.anyio
LADDER = "ladders/l8b.yml"
TOOL_OF_ROUTE = {"run_rung": "rung_run", "smoke_test": "smoke_test"}


async def climb(client: Client, *, wait_s: float = 60, max_steps: int = 20, target: str = "local") -> list[str]:
    """Follow `next.route` with tool calls until the ladder is done; the routes taken."""
    routes = []
    for _ in range(max_steps):
        step = await call(client, "ladder_next_rung", ladder=LADDER)
        routes.append(step["route"])
        if step["route"] == "done":
            return routes
        if step["route"] == "record_ceiling":
            await call(client, "ceiling_record", ladder=LADDER)
            continue
        assert step["route"] in ("run_rung", "smoke_test"), step
        args: dict[str, Any] = {"ladder": LADDER, "wait_s": wait_s}
        if step["route"] == "run_rung":
            args |= {"target": target, "replay": step.get("replay_of")}
        job = await call(client, TOOL_OF_ROUTE[step["route"]], **args)
        while not job["done"]:
            job = await call(client, "job_status", job_id=job["job_id"], wait_s=wait_s)
        assert job["state"] == "succeeded", job
    raise AssertionError(f"no ceiling after {max_steps} steps: {routes}")


# policy, the fake GPU, and what must stop the climb: the KV cache (max_model_len phase)
# or a CUDA OOM while profiling a large batch (max_num_batched_tokens phase)
CLIMBS = {
    "doubling-kv-bound": ("doubling", {"FAKE_VLLM_KV_TOKENS": "100000"}, "oom_kv_cache"),
    "signal-batch-bound": (
        "signal",
        {"FAKE_VLLM_KV_TOKENS": "300000", "FAKE_VLLM_MAX_BATCHED_TOKENS": "65536"},
        "oom_cuda",
    ),
}


@pytest.mark.parametrize("case", sorted(CLIMBS))
async def test_a_full_climb_through_mcp_calls_alone(env: Env, case: str) -> None:
    policy, gpu, stopped_by = CLIMBS[case]
    write_targets(env, **gpu)
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env, policy=policy)
        routes = await climb(client, wait_s=2)
        status = await call(client, "ladder_status", ladder=LADDER)
        jobs = (await call(client, "job_list", limit=100))["jobs"]
    ladder, rows = status["ladder"], status["rows"]
    ceiling = ladder["ceiling"]
    assert routes[0] == "run_rung" and routes[-2:] == ["record_ceiling", "done"] and "smoke_test" in routes
    # the ceiling went past the floor, fits the fake GPU, and rests on a rung that booted and passed a smoke test
    kv_tokens = int(gpu["FAKE_VLLM_KV_TOKENS"])
    assert 32768 < ceiling["max_model_len"] <= min(kv_tokens, 131072)
    assert ceiling["max_num_batched_tokens"] <= int(gpu.get("FAKE_VLLM_MAX_BATCHED_TOKENS", 1 << 30))
    proof = [rows[i - 1] for i in ceiling["proven_by"]]
    assert all(r["status"] == "boot_ok" for r in proof) and any(r["smoke"] == "pass" for r in proof)
    assert ceiling["kv_cache_tokens"] >= ceiling["max_model_len"]
    # what stopped it: a rung above the ceiling that failed for memory
    failed = [r for r in rows if r["status"] == stopped_by]
    assert failed and all(
        (r["max_model_len"], r["max_num_batched_tokens"])
        > (ceiling["max_model_len"], ceiling["max_num_batched_tokens"])
        for r in failed
    ), rows
    assert all(j["state"] == "succeeded" for j in jobs)
    assert len(jobs) == routes.count("run_rung") + routes.count("smoke_test")
    for rung in ladder["rungs"]:
        log = env.workspace / "ladders" / rung["log_file"]
        assert "vLLM" in log.read_text()  # every rung comes from a real boot log
    assert not fake_servers(env.port)  # ceiling_record stopped the last one


async def _boot_over_stdio_then_signal(
    env: Env, sig: signal.Signals, gone_within_s: float
) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """A slow boot started through a real `redline mcp` on stdio; then `sig` to that server, and wait until it is gone.

    Returns the job, its record as the boot ran, and the record's path (what the server wrote last is there).
    """
    write_targets(env, FAKE_VLLM_BOOT_S="60")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "redline", "mcp", "--config", str(env.config_path)],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
    seen: dict[str, Any] = {}

    async def boot_then_signal() -> None:
        async with Client(params) as client:
            job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=1)
            path = env.config.state_dir / "jobs" / f"{job['job_id']}.json"
            seen.update(job=job, path=path, record=json.loads(path.read_text()))
            assert seen["record"]["processes"][0]["locator"]["pid"] in fake_servers(env.port)
            os.kill(seen["record"]["owner_pid"], sig)
            with anyio.fail_after(gone_within_s):
                while os.path.exists(f"/proc/{seen['record']['owner_pid']}"):
                    await anyio.sleep(0.05)
            seen["gone"] = True

    try:
        await boot_then_signal()
    except Exception:  # noqa: BLE001 - the client only notices that its server is gone
        if "gone" not in seen:
            raise
    return seen["job"], seen["record"], seen["path"]


async def test_a_killed_server_leaves_no_orphan_after_restart(env: Env) -> None:
    """`redline mcp` is SIGKILLed mid-boot: the fake vLLM it started survives it; the next
    server on the workspace marks the job interrupted and stops that vLLM by its process group."""
    job, record, _ = await _boot_over_stdio_then_signal(env, signal.SIGKILL, 10)  # no cleanup runs
    owner = record["owner_pid"]
    assert record["state"] == "running" and len(record["processes"]) == 1
    orphan = record["processes"][0]["locator"]["pid"]
    assert orphan in fake_servers(env.port), "the boot should have outlived its killed MCP server"

    async with Client(build_server(env.config)) as client:
        for _ in range(100):
            if not fake_servers(env.port):
                break
            await anyio.sleep(0.1)
        status = await call(client, "job_status", job_id=job["job_id"])
        step = await call(client, "ladder_next_rung", ladder=LADDER)
    assert not fake_servers(env.port)
    assert status["state"] == "interrupted" and f"pid {owner}" in status["error"]
    assert step["route"] == "run_rung"  # nothing was recorded for the interrupted boot


async def test_sigterm_to_a_stdio_server_stops_the_servers_of_its_jobs(env: Env) -> None:
    """`redline mcp` gets SIGTERM mid-boot: before it exits, the job is interrupted and its vLLM stopped."""
    _, _, path = await _boot_over_stdio_then_signal(env, signal.SIGTERM, 30)
    after = json.loads(path.read_text())
    assert not fake_servers(env.port)  # stopped by the server itself, not by a later restart
    assert after["state"] == "interrupted" and "shut down" in after["error"]
