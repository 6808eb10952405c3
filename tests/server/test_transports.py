"""Every tool through a real `redline mcp` subprocess, on stdio and over streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.server.helpers import Env, call, fake_servers, free_port, new_ladder, write_env, write_targets
from tests.server.scenario import EVERY_TOOL, exercise_every_tool

pytestmark = pytest.mark.anyio
TOKEN = "t0ken-for-tests-0123456789abcdef"


def redline_mcp(env: Env, *args: str) -> list[str]:
    return [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path), *args]


async def test_every_tool_over_stdio(env: Env) -> None:
    argv = redline_mcp(env)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params) as client:
        assert await exercise_every_tool(client, env) == EVERY_TOOL
    assert not fake_servers(env.port)


@contextmanager
def http_server(
    env: Env, *args: str, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    port = free_port()
    log = env.root / "http.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            redline_mcp(env, "--http", "--port", str(port), *args),
            env={**os.environ, **(extra_env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url, log, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_every_tool_over_http(env: Env) -> None:
    with http_server(env) as (url, log, _):
        async with Client(url) as client:
            assert await exercise_every_tool(client, env) == EVERY_TOOL
    assert not fake_servers(env.port)
    assert "Traceback" not in log.read_text()


async def test_http_with_a_token_refuses_callers_without_it(tmp_path: Path) -> None:
    env = write_env(tmp_path / "srv", http={"bearer_token_env": "RL_TEST_TOKEN"})
    with http_server(env, extra_env={"RL_TEST_TOKEN": TOKEN}) as (url, _, _):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            response = httpx.post(url, json=body, headers=headers)
            assert response.status_code == 401 and "RL_TEST_TOKEN" in response.json()["error"]
        import httpx2  # the MCP client's HTTP stack
        from mcp.client.streamable_http import streamable_http_client

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            assert (await call(client, "job_list"))["jobs"] == []


def test_http_on_a_public_address_without_a_token_is_refused(env: Env) -> None:
    done = subprocess.run(
        redline_mcp(env, "--http", "--host", "0.0.0.0", "--port", str(free_port())),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "needs a bearer token" in done.stderr and "bearer_token_env" in done.stderr


def test_host_and_port_without_http_are_refused(env: Env) -> None:
    done = subprocess.run(redline_mcp(env, "--port", "9"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--host and --port are for --http" in done.stderr


def test_stdio_server_writes_nothing_but_protocol_to_stdout(env: Env) -> None:
    init = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
    )
    done = subprocess.run(redline_mcp(env), input=init, capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines and all(line.startswith('{"jsonrpc":"2.0"') or line.startswith('{"') for line in lines), done.stdout
    assert "redline MCP server: workspace" in done.stderr  # the log went to stderr


async def test_sigterm_to_an_http_server_stops_the_servers_of_its_jobs(env: Env) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="60")
    with http_server(env) as (url, log, proc):
        async with Client(url) as client:
            await new_ladder(client, env)
            job = await call(client, "rung_run", ladder="ladders/l8b.yml", target="local", wait_s=1)
        assert not job["done"] and fake_servers(env.port)
        proc.terminate()
        proc.wait(timeout=60)  # uvicorn shuts down gracefully, then re-raises SIGTERM on itself
    assert not fake_servers(env.port)
    record = (env.config.state_dir / "jobs" / f"{job['job_id']}.json").read_text()
    assert '"state": "interrupted"' in record and "shut down" in record
