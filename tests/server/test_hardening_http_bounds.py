"""Issue 32, item 6: `redline mcp --http` bounds the connections that have not shown the token, over real HTTP.

The real app (build_server behind http_app's bearer token) is served by uvicorn in-process with the protocol
`redline mcp --http` runs (server/http_guard.py), its deadline cut from 5 s to 1 s to keep the test short. Another
user holds 1,100 idle connections (more than the usual limit on open files) and trickles half a request on others:
the owner's MCP client still calls a tool, the server never holds more than MAX_WAITING of them, and each is closed
once its deadline passes; a connection that showed the token stays open.
"""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
import uvicorn

from redline.server.app import build_server, http_app
from redline.server.http import Token
from redline.server.http_guard import MAX_WAITING, guarded_protocol
from tests.server.helpers import Env, call, free_port
from tests.server.test_transports import authed

pytestmark = pytest.mark.anyio
TOKEN = Token("t" * 32, "the test")
IDLE = 1_100
WITHIN_S = 1.0


@asynccontextmanager
async def serving(env: Env) -> AsyncIterator[tuple[int, uvicorn.Server]]:
    port = free_port()
    app = http_app(build_server(env.config), "127.0.0.1", TOKEN)
    protocol = guarded_protocol(TOKEN, within_s=WITHIN_S)
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
            assert len(server.server_state.connections) <= MAX_WAITING + 8
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
