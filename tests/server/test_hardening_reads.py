"""Issue 32, item 2, through the real MCP server in-process: a file a caller names is read through the one untrusted
reader, so no call waits on a FIFO or reads a device without end.

memory_predict on a model folder whose config.json is a FIFO or a link to /dev/zero is refused at once, and fifty
such calls at once (more than the worker threads) leave every other tool answering; the ladder resource and the
ladder tools on a ladder file that is a FIFO are refused at once too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import anyio
import pytest
from mcp import Client

from redline.server.app import build_server
from tests.server.helpers import Env, call, call_error

pytestmark = pytest.mark.anyio
CALLS = 50  # over anyio's 40 worker threads: were each to wait on the FIFO, every tool would wait behind them


@contextmanager
def watchdog(fifo: Path, after_s: float = 20) -> Iterator[None]:
    """Were a read to wait on the FIFO, after `after_s` its readers are given its end (again and again, as more
    come): the test then fails on what they said, instead of hanging (a worker thread cannot be cancelled)."""
    done = threading.Event()

    def unblock() -> None:
        if done.wait(after_s):
            return
        while not done.wait(0.05):
            with suppress(OSError):  # ENXIO: no reader waits now
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
async def test_untrusted_reads_a_config_json_fifo_or_device_is_refused_at_once_and_wedges_nothing(
    env: Env, tmp_path: Path, kind: str
) -> None:
    folder = env.workspace / "model"  # where memory_predict may read a model folder (docs/security.md, 38.9)
    folder.mkdir()
    config = folder / "config.json"
    os.mkfifo(config) if kind == "fifo" else config.symlink_to("/dev/zero")
    args = {"model": str(folder), "max_model_len": 4096, "gpu_name": "NVIDIA H200", "gpu_memory_gib": 139.8}
    said: list[str] = []
    with watchdog(config):
        async with Client(build_server(env.config)) as client:

            async def predict() -> None:
                said.append(await call_error(client, "memory_predict", **args))

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    for _ in range(CALLS):
                        group.start_soon(predict)
                await call(client, "job_list")  # answers: no worker thread is held
    assert len(said) == CALLS and all("config.json is not a regular file" in s for s in said), said[:1]


async def test_untrusted_reads_a_ladder_file_that_is_a_fifo_is_refused_at_once(env: Env) -> None:
    (env.workspace / "ladders").mkdir(exist_ok=True)
    fifo = env.workspace / "ladders" / "l8b.yml"
    os.mkfifo(fifo)
    with watchdog(fifo):
        async with Client(build_server(env.config)) as client:
            with anyio.fail_after(30):
                for tool in ("ladder_status", "ladder_next_rung"):
                    assert "not a regular file" in await call_error(client, tool, ladder="ladders/l8b.yml"), tool
                with pytest.raises(Exception, match="not a regular file"):
                    await client.read_resource("redline://ladders/ladders/l8b.yml")
