"""Hardening class 8, over real HTTP: DNS-rebinding protection (Host and Origin) on whatever loopback address
the server is bound to, every 127.x address and every spelling of ::1; a non-loopback bind still needs a token."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from mcp import Client

from redline.server.http import bind_address, transport_security
from tests.server.helpers import Env, call, free_port

pytestmark = pytest.mark.anyio
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


IPV6 = pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback")


@contextmanager
def served(env: Env, host: str) -> Iterator[str]:
    """`redline mcp --http --host host --no-token` running (the bearer token has tests of its own; here the guard is
    Host and Origin, all a loopback server opted out of the token has); yields its base URL as a client writes it."""
    port = free_port()
    log = env.root / "http.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "redline",
                "mcp",
                "--config",
                str(env.config_path),
                "--http",
                "--host",
                host,
                "--port",
                str(port),
                "--no-token",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
    address = ipaddress.ip_address(bind_address(host))
    netloc = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                with socket.create_connection((str(address), port), timeout=0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield f"http://{netloc}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in log.read_text()


def post(base: str, **headers: str) -> httpx.Response:
    with (
        httpx.Client(trust_env=False) as http,
        http.stream("POST", f"{base}/mcp", json=INIT, headers={**ACCEPT, **headers}, timeout=10) as response,
    ):
        response.read()
        return response


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.2",
        "127.45.6.7",
        pytest.param("::1", marks=IPV6),
        pytest.param("[::1]", marks=IPV6),
        pytest.param("0:0:0:0:0:0:0:1", marks=IPV6),
    ],
)
async def test_http_on_any_loopback_address_refuses_a_foreign_host_or_origin(env: Env, host: str) -> None:
    with served(env, host) as base:
        netloc = base.removeprefix("http://")
        port = netloc.rpartition(":")[2]
        assert post(base).status_code == 200  # the client's own Host: the bound address
        assert post(base, Origin=base).status_code == 200  # a page served from the bound address itself
        assert post(base, Host=f"evil.example:{port}").status_code == 421  # a rebound DNS name
        assert post(base, Host="evil.example").status_code == 421
        assert post(base, Origin="http://evil.example").status_code == 403  # a foreign page's request
        assert post(base, Origin=f"http://evil.example:{port}").status_code == 403
        assert post(base, Host=f"localhost:{port}").status_code == 200
        async with Client(f"{base}/mcp") as client:  # and the real MCP client works there
            assert (await call(client, "job_list"))["jobs"] == []


@pytest.mark.parametrize("host", ["0.0.0.0", pytest.param("::", marks=IPV6)])
def test_http_on_any_loopback_address_a_non_loopback_bind_still_needs_a_token(env: Env, host: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "redline",
            "mcp",
            "--config",
            str(env.config_path),
            "--http",
            "--host",
            host,
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "needs a bearer token" in done.stderr


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.2",
        "127.255.255.254",
        "localhost",
        "::1",
        "[::1]",
        "0:0:0:0:0:0:0:1",
        "0000:0000:0000:0000:0000:0000:0000:0001",
    ],
)
def test_http_on_any_loopback_address_protection_is_set_explicitly(host: str) -> None:
    settings = transport_security(host)
    assert settings.enable_dns_rebinding_protection
    assert "evil.example:*" not in settings.allowed_hosts and settings.allowed_hosts
    assert all(o.startswith("http://") for o in settings.allowed_origins)
    spelled = bind_address(host)
    shown = f"[{spelled}]" if ":" in spelled else spelled
    assert f"{shown}:*" in settings.allowed_hosts and f"http://{shown}:*" in settings.allowed_origins
