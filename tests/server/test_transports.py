"""Every tool through a real `redline mcp` subprocess, on stdio and over streamable HTTP."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.server.helpers import Env, call, fake_servers, free_port, new_ladder, write_env, write_targets
from tests.server.scenario import EVERY_TOOL, exercise_every_tool

pytestmark = pytest.mark.anyio
TOKEN = "t0ken-for-tests-0123456789abcdef"
PRINTED = re.compile(r"bearer token \(send `Authorization: Bearer <token>`\): (\S+)$", re.M)


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
    env: Env, *args: str, extra_env: dict[str, str] | None = None, printed: bool = True
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
        while printed and not PRINTED.search(log.read_text()):  # the generated token, once it is printed
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield url, log, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def printed_token(log: Path) -> str:
    """The token `redline mcp --http` generated, from the one line it printed on stderr."""
    found = PRINTED.findall(log.read_text())
    assert len(found) == 1, log.read_text()  # printed once
    return str(found[0])


@asynccontextmanager
async def authed(url: str, token: str) -> AsyncIterator[Client]:
    """The real MCP client over HTTP, sending the bearer token."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client  # the MCP client's own timeouts

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_every_tool_over_http(env: Env) -> None:
    with http_server(env) as (url, log, _):
        async with authed(url, printed_token(log)) as client:
            assert await exercise_every_tool(client, env) == EVERY_TOOL
    assert not fake_servers(env.port)
    assert "Traceback" not in log.read_text()


async def test_http_with_a_token_refuses_callers_without_it(tmp_path: Path) -> None:
    env = write_env(tmp_path / "srv", http={"bearer_token_env": "RL_TEST_TOKEN"})
    with http_server(env, extra_env={"RL_TEST_TOKEN": TOKEN}, printed=False) as (url, _, _):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            response = httpx.post(url, json=body, headers=headers)
            assert response.status_code == 401 and "RL_TEST_TOKEN" in response.json()["error"]
        async with authed(url, TOKEN) as client:
            assert (await call(client, "job_list"))["jobs"] == []


def test_http_on_a_public_address_without_a_token_is_refused(env: Env) -> None:
    done = subprocess.run(
        redline_mcp(env, "--http", "--host", "0.0.0.0", "--port", str(free_port())),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "needs a bearer token" in done.stderr and "bearer_token_env" in done.stderr and "--token-file" in done.stderr


BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


async def test_http_token_is_the_default_generated_printed_once_and_required(env: Env) -> None:
    with http_server(env) as (url, log, _):
        token = printed_token(log)
        assert len(token) >= 32
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}, {"Authorization": "Basic x"}):
            response = httpx.post(url, json=BODY, headers=headers)
            assert response.status_code == 401, headers
            assert "printed on stderr" in response.json()["error"] and token not in response.text
        async with authed(url, token) as client:
            assert (await call(client, "job_list"))["jobs"] == []
    with http_server(env) as (_, log2, _):
        assert printed_token(log2) != token  # a new one at each start


async def test_http_token_read_from_a_file_the_user_names(env: Env) -> None:
    secret = env.root / "token"
    secret.write_text(TOKEN + "\n")
    secret.chmod(0o600)
    with http_server(env, "--token-file", str(secret), printed=False) as (url, log, _):
        assert not PRINTED.search(log.read_text())  # a named token is never printed
        response = httpx.post(url, json=BODY)
        assert response.status_code == 401 and str(secret) in response.json()["error"]
        async with authed(url, TOKEN) as client:
            assert (await call(client, "job_list"))["jobs"] == []


def test_http_token_file_readable_by_others_or_short_is_refused(env: Env) -> None:
    secret = env.root / "token"
    for text, mode, words in ((TOKEN, 0o644, "chmod 600"), ("short", 0o600, "at least 16 characters")):
        secret.write_text(text)
        secret.chmod(mode)
        assert stat.S_IMODE(secret.stat().st_mode) == mode
        done = subprocess.run(
            redline_mcp(env, "--http", "--port", str(free_port()), "--token-file", str(secret)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and words in done.stderr, done.stderr


def test_http_token_opt_out_is_loopback_only_and_said(env: Env) -> None:
    done = subprocess.run(
        redline_mcp(env, "--http", "--host", "0.0.0.0", "--port", str(free_port()), "--no-token"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--no-token" in done.stderr and "needs a bearer token" in done.stderr
    with http_server(env, "--no-token", printed=False) as (url, log, _):
        headers = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(url, json=BODY, headers=headers).status_code != 401
        assert "every user of this host can call" in log.read_text() and not PRINTED.search(log.read_text())


async def test_http_token_sessions_are_capped_per_caller(env: Env) -> None:
    from redline.server.http import MAX_SESSIONS, SESSION_IDLE_S

    assert SESSION_IDLE_S <= 600  # an abandoned session frees its place within minutes
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    with http_server(env) as (url, log, _):
        headers = {
            "Authorization": f"Bearer {printed_token(log)}",
            "Accept": "application/json, text/event-stream",
        }
        codes = [httpx.post(url, json=init, headers=headers).status_code for _ in range(MAX_SESSIONS + 1)]
        assert codes == [200] * MAX_SESSIONS + [503]


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


def test_stdio_client_gone_before_the_answer_ends_the_server_quietly(env: Env) -> None:
    """A client that closes its end of stdout before the server answers: the server ends with 0, no traceback."""
    init = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
    )
    proc = subprocess.Popen(redline_mcp(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # nobody reads the answer
    proc.stdin.write(init.encode())
    proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err and "BrokenPipeError" not in err, err


async def test_sigterm_to_an_http_server_stops_the_servers_of_its_jobs(env: Env) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="60")
    with http_server(env) as (url, log, proc):
        async with authed(url, printed_token(log)) as client:
            await new_ladder(client, env)
            job = await call(client, "rung_run", ladder="ladders/l8b.yml", target="local", wait_s=1)
        assert not job["done"] and fake_servers(env.port)
        proc.terminate()
        proc.wait(timeout=60)  # uvicorn shuts down gracefully, then re-raises SIGTERM on itself
    assert not fake_servers(env.port)
    record = (env.config.state_dir / "jobs" / f"{job['job_id']}.json").read_text()
    assert '"state": "interrupted"' in record and "shut down" in record
