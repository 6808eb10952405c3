"""A local target that runs several fake servers at once, as a cluster runs a pod per server.

Pods each have an address of their own, so every server of a campaign listens on the one port its serve
config names. On one host they cannot: each server here gets a free port of its own instead, and the
health check and the bench (which names the server's run folder, as a bench in a pod does) are moved to it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from redline.targets import LocalTarget, ServerHandle, WaitOutcome
from redline.targets.base import RunResult
from tests.server.helpers import FAKE_VLLM, free_port


class ServersAtOnce(LocalTarget):
    max_servers = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ports: dict[str, int] = {}  # run folder -> the port its server listens on

    async def start(self, argv: list[str], *, run_dir: str | None = None, **kwargs: Any) -> ServerHandle:
        run_dir = run_dir or self.new_run_dir()
        self.ports[run_dir] = port = free_port()
        return await super().start(_moved(argv, "--port", str(port)), run_dir=run_dir, **kwargs)

    async def wait_ready(
        self, handle: ServerHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        url = httpx.URL(health_url).copy_with(port=self.ports[handle.run_dir])
        return await super().wait_ready(handle, str(url), deadline_s, poll_s)

    async def run(self, argv: list[str], **kwargs: Any) -> RunResult:
        if "--result-dir" in argv and (port := self.ports.get(argv[argv.index("--result-dir") + 1])):
            url = httpx.URL(argv[argv.index("--base-url") + 1]).copy_with(port=port)
            argv = _moved(argv, "--base-url", str(url))
        return await super().run(argv, **kwargs)


def _moved(argv: list[str], flag: str, value: str) -> list[str]:
    i = argv.index(flag)
    return [*argv[: i + 1], value, *argv[i + 2 :]]


def servers_at_once(root: Path, engine_env: dict[str, str]) -> ServersAtOnce:
    return ServersAtOnce(
        "local", workdir=str(root / "target"), engine_command=[sys.executable, str(FAKE_VLLM)], engine_env=engine_env
    )
