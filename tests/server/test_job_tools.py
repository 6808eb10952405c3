"""Jobs of any result type: a tool's own job comes back typed, and job_status / job_list show every job's
result, including jobs written by an earlier redline."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context
from pydantic import BaseModel

from redline.ops.request_base import Request
from redline.server.app import build_server
from redline.server.jobs import JobContext, JobView
from redline.server.toolkit import WaitArg, expand, run_job
from tests.server.helpers import Env, call

pytestmark = pytest.mark.anyio


class SweepOutcome(BaseModel):
    """A result that is not a rung's: what some other job would return."""

    cells: int
    champion: str


class SweepRequest(Request):
    name: str


async def sweep_run(ctx: Context, request: SweepRequest, wait_s: WaitArg = 10) -> JobView[SweepOutcome]:
    """A made-up tool: a job whose result is a SweepOutcome."""

    async def operation(job: JobContext) -> SweepOutcome:
        await job.progress(0.5, "cell 2 of 3")
        return SweepOutcome(cells=3, champion=request.name)

    return await run_job(
        ctx,
        SweepOutcome,
        "sweep_run",
        operation,
        ladder=None,
        target="gpu-a",
        args={"name": request.name},
        wait_s=wait_s,
    )


async def test_a_job_of_another_result_type_comes_back_typed_and_is_listed(env: Env) -> None:
    server = build_server(env.config)
    server.add_tool(expand(sweep_run, "sweep_run", SweepRequest), structured_output=True)
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        done = await call(client, "sweep_run", name="cell-7")
        status = await call(client, "job_status", job_id=done["job_id"])
        jobs = (await call(client, "job_list"))["jobs"]
    result_schema = listed["sweep_run"].output_schema["properties"]["result"]
    assert "SweepOutcome" in json.dumps(result_schema)  # typed by the tool that started it
    assert done["state"] == "succeeded" and done["result"] == {"cells": 3, "champion": "cell-7"}
    assert status["result"] == done["result"] and [j["tool"] for j in jobs] == ["sweep_run"]


# A job file as redline wrote it before handles had a locator (flat pid/pgid), with a rung outcome as its result.
OLD_JOB = {
    "id": "j-20261130T100000Z-0000abcd",
    "tool": "rung_run",
    "state": "succeeded",
    "ladder": "ladders/l8b.yml",
    "target": "local",
    "args": {"replay": None},
    "owner_pid": 4_000_000,
    "owner_start_ticks": 5,
    "created_at": "2026-11-30T10:00:00.000+00:00",
    "started_at": "2026-11-30T10:00:00.100+00:00",
    "finished_at": "2026-11-30T10:02:31.000+00:00",
    "progress": 1.0,
    "message": "rung 1: boot_ok",
    "processes": [
        {
            "target": "local",
            "pid": 4_000_001,
            "pgid": 4_000_001,
            "run_dir": "/tmp/redline/run-1",
            "log_path": "/tmp/redline/run-1/boot.log",
            "started_at": "2026-11-30T10:00:00+00:00",
            "start_ticks": 99,
        }
    ],
    "result": {"rung": {"index": 1, "status": "boot_ok"}, "next": {"route": "smoke_test", "reason": "smoke-test it"}},
    "error": None,
}


async def test_a_job_file_from_an_earlier_redline_still_reads(env: Env) -> None:
    jobs_dir = env.config.state_dir / "jobs"
    jobs_dir.mkdir(parents=True)
    (jobs_dir / f"{OLD_JOB['id']}.json").write_text(json.dumps(OLD_JOB))
    async with Client(build_server(env.config)) as client:
        status: dict[str, Any] = await call(client, "job_status", job_id=OLD_JOB["id"])
        listed = (await call(client, "job_list"))["jobs"]
        cancelled = await call(client, "job_cancel", job_id=OLD_JOB["id"])  # finished: left as it is
    assert status["state"] == "succeeded" and status["done"] and status["result"] == OLD_JOB["result"]
    assert [j["job_id"] for j in listed] == [OLD_JOB["id"]] and cancelled["state"] == "succeeded"
