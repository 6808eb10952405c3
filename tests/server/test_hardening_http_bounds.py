"""Issue 32, item 6: `redline mcp --http` bounds the connections that have not shown the token, over real HTTP.

The real app (build_server behind http_app's bearer token) is served by uvicorn in-process with the protocol
`redline mcp --http` runs (server/http_guard.py), its deadline cut from 5 s to 1 s to keep the test short. Another
user holds 1,100 idle connections (more than the usual limit on open files) and trickles half a request on others:
the owner's MCP client still calls a tool, the server never holds more than MAX_WAITING of them, and each is closed
once its deadline passes; a connection that showed the token stays open.
"""

from __future__ import annotations

import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
import uvicorn

from redline.server.app import build_server, http_app
from redline.server.http import Token
from redline.server.http_guard import MAX_UNREAD, MAX_WAITING, guarded_protocol
from tests.server.helpers import Env, call, free_port
from tests.server.test_transports import authed, http_server, printed_token

pytestmark = pytest.mark.anyio
TOKEN = Token("t" * 32, "the test")
IDLE = 1_100
WITHIN_S = 1.0


@asynccontextmanager
async def serving(env: Env, within_s: float = WITHIN_S) -> AsyncIterator[tuple[int, uvicorn.Server]]:
    port = free_port()
    app = http_app(build_server(env.config), "127.0.0.1", TOKEN)
    protocol = guarded_protocol(TOKEN, within_s=within_s)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http=protocol))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        with anyio.fail_after(20):
            while not server.started:
                await anyio.sleep(0.02)
        try:
            yield port, server
        finally:
            server.should_exit = True


def held(server: uvicorn.Server) -> int:
    """The connections the server keeps open. One the guard closed is left out: uvicorn drops it from its set at the
    loop's next turn, when its descriptor is closed, and a sample taken before that turn would count it (1,100 once)."""
    return sum(1 for c in server.server_state.connections if not c.transport.is_closing())


def closed_by_the_server(sock: socket.socket) -> bool:
    """Whether the server closed the connection (what it answered before, such as a 401, read and dropped)."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
        return True
    except BlockingIOError:
        return False  # still open: nothing more to read yet
    except ConnectionResetError:
        return True


async def test_http_bounds_idle_connections_never_lock_the_owner_out(env: Env) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE + 500:  # this test's own sockets, past a 1,024 limit
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, IDLE + 1000), hard))
    idle: list[socket.socket] = []
    try:
        async with serving(env) as (port, server):
            for _ in range(IDLE):
                idle.append(socket.create_connection(("127.0.0.1", port)))
            half = socket.create_connection(("127.0.0.1", port))
            half.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a request never finished
            wrong = socket.create_connection(("127.0.0.1", port))
            wrong.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer no\r\n\r\n")
            idle += [half, wrong]
            shown = socket.create_connection(("127.0.0.1", port))
            shown.sendall(
                f"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN.value}\r\n\r\n".encode()
            )
            with anyio.fail_after(20):
                async with authed(f"http://127.0.0.1:{port}/mcp", TOKEN.value) as client:
                    assert "jobs" in await call(client, "job_list")
            assert held(server) <= MAX_WAITING + 8
            await anyio.sleep(WITHIN_S + 0.5)
            assert all(closed_by_the_server(s) for s in idle)
            assert not closed_by_the_server(shown)  # the token holder's: kept
            shown.close()
    finally:
        for sock in idle:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_http_bounds_a_connection_that_sends_nothing_is_closed_after_its_deadline(env: Env) -> None:
    async with serving(env) as (port, _):
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            start = time.monotonic()
            with anyio.fail_after(10):
                while not closed_by_the_server(sock):
                    await anyio.sleep(0.05)
            assert WITHIN_S - 0.2 <= time.monotonic() - start
        finally:
            sock.close()


# ---- issue 38, item 7: a flood from another process drops none of the owner's calls ------------------------------------

FLOOD = """
import socket, sys, time
port, until = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
held = []
while time.monotonic() < until:
    try:
        held.append(socket.create_connection(("127.0.0.1", port)))
    except OSError:
        time.sleep(0.001)
    if len(held) > 800:  # within this process's own limit on open files: the oldest let go, a new one made
        held.pop(0).close()
"""
CALLS = 40


def fresh_call(port: int, token: str) -> str:
    """One of the owner's calls on a fresh connection, as an MCP client opens one: a whole POST of `initialize` with
    the token, sent at once; then its session ended (a DELETE on another fresh connection), so the 40 calls stay
    within the token's sessions. What the server answered each (its status lines), or why it did not."""
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
        b'"capabilities": {}, "clientInfo": {"name": "owner", "version": "1"}}}'
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    answer = _exchange(port, head + body)
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace") or "closed unanswered"
    session = re.search(rb"(?im)^mcp-session-id: *(\S+)", answer)
    if session is None:
        return status
    end = (
        f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"mcp-session-id: {session.group(1).decode()}\r\nContent-Length: 0\r\n\r\n"
    ).encode()
    ended = _exchange(port, end).split(b"\r\n", 1)[0].decode(errors="replace")
    return f"{status}; {ended or 'closed unanswered'}"


def _exchange(port: int, request: bytes) -> bytes:
    """What the server sent back on a fresh connection before its headers ended (b'' if it closed the connection
    unanswered or could not be reached)."""
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(request)
            while b"\r\n\r\n" not in answer and (chunk := sock.recv(4096)):
                answer += chunk
    except OSError:
        pass
    return answer


async def test_http_bounds_a_flood_of_idle_connections_from_another_process_drops_none_of_the_owner_s_calls(
    env: Env,
) -> None:
    """The issue's run: another local process opens idle connections as fast as it can while the owner's client makes
    40 fresh calls; the guard closed some of the owner's connections (2 to 13 of 40) as the oldest waiting, their
    requests arrived but not yet read. A connection whose bytes have arrived is never the one closed."""
    script = env.root / "flood.py"
    script.write_text(FLOOD)
    with http_server(env) as (url, log, _):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        token = printed_token(log)
        flood = subprocess.Popen([sys.executable, str(script), str(port), "60"])
        try:
            await anyio.sleep(1.0)  # the flood under way: the guard evicting at its cap
            answers = [await anyio.to_thread.run_sync(fresh_call, port, token) for _ in range(CALLS)]
        finally:
            flood.kill()
            flood.wait()
    dropped = [f"{i}: {a}" for i, a in enumerate(answers) if a != "HTTP/1.1 200 OK; HTTP/1.1 200 OK"]
    assert dropped == []


async def test_http_bounds_a_flood_that_sends_a_byte_on_each_connection_still_cannot_hold_every_descriptor(
    env: Env,
) -> None:
    """Bytes unread keep a connection from being closed by the cap only while the loop has not read them, and at most
    MAX_UNREAD past it: 1,100 connections that each send half a request are held to the cap once read. The deadline
    is 30 s here, so the cap alone brings them down (a busy machine's loop may not have read the burst at once)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE + 500:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, IDLE + 1000), hard))
    socks: list[socket.socket] = []
    try:
        async with serving(env, within_s=30.0) as (port, server):
            for _ in range(IDLE):
                sock = socket.create_connection(("127.0.0.1", port))
                sock.sendall(b"POST /mcp HTTP/1.1\r\n")
                socks.append(sock)
            kept: list[int] = []
            with anyio.move_on_after(10):  # the burst accepted (past MAX_UNREAD closed at once), then read
                while not kept or kept[-1] > MAX_WAITING + 8:
                    await anyio.sleep(0.05)
                    kept.append(held(server))
            assert max(kept) <= MAX_WAITING + MAX_UNREAD + 8 and kept[-1] <= MAX_WAITING + 8, kept
            with anyio.fail_after(20):
                async with authed(f"http://127.0.0.1:{port}/mcp", TOKEN.value) as client:
                    assert "jobs" in await call(client, "job_list")
    finally:
        for sock in socks:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
