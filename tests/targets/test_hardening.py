"""Hardening classes 5 and 6 at the target: no signal through a stale handle; the server that answers
is ours; one engine per target at a time. Each runs on this host and through the real sshd."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from redline.errors import TargetBusy, TargetError
from redline.targets import PosixLocator, ServerHandle, Target
from tests.conftest import pid_running

from .conftest import PY, free_port, wait_port
from .test_processes import SLEEP, http_server, started

pytestmark = pytest.mark.anyio


async def test_the_server_that_answers_is_ours_a_neighbour_on_the_port_is_port_taken(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    (tmp_path / "health").write_text("ok")
    port = free_port()
    neighbour = subprocess.Popen(http_server(tmp_path, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_port(port)
        ours = await started(target, spawn, [PY, *SLEEP])  # a server still loading: not on the port yet
        outcome = await target.wait_ready(ours, f"http://127.0.0.1:{port}/health", 20, 0.05)
        assert outcome.status == "taken"
        assert f"port taken: port {port}" in (outcome.detail or "") and str(neighbour.pid) in (outcome.detail or "")
    finally:
        neighbour.kill()
        neighbour.wait()


async def test_the_server_that_answers_is_ours_our_own_listener_is_ready(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    (tmp_path / "health").write_text("ok")
    port = free_port()
    handle = await started(target, spawn, http_server(tmp_path, port))
    outcome = await target.wait_ready(handle, f"http://127.0.0.1:{port}/health", 20, 0.05)
    assert (outcome.status, outcome.detail) == ("ready", None)


async def test_the_server_that_answers_is_ours_one_engine_per_target_at_a_time(
    target: Target, spawn: list[ServerHandle]
) -> None:
    first = await target.start([PY, *SLEEP], env={}, cwd=None, log_path="boot.log", exclusive=True)
    spawn.append(first)
    with pytest.raises(TargetBusy, match=f"process group {first.locator.pid} .* still runs"):
        await target.start([PY, *SLEEP], env={}, cwd=None, log_path="boot.log", exclusive=True)
    helper = await started(target, spawn, [PY, *SLEEP])  # a non-engine process is not held back
    assert await target.is_alive(helper)
    await target.stop(first, grace_s=0)
    second = await target.start([PY, *SLEEP], env={}, cwd=None, log_path="boot.log", exclusive=True)
    spawn.append(second)
    assert await target.is_alive(second)


async def test_no_engine_without_a_record_a_handle_without_a_start_time_never_signals(
    target: Target, spawn: list[ServerHandle]
) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    loc = handle.locator
    assert isinstance(loc, PosixLocator) and loc.start_ticks is not None
    stale = handle.model_copy(update={"locator": loc.model_copy(update={"start_ticks": None})})
    with pytest.raises(TargetError, match="no start time recorded"):
        await target.stop(stale, grace_s=0)
    assert pid_running(loc.pid)  # untouched; the real handle still stops it
    await target.stop(handle, grace_s=0)
    assert not pid_running(loc.pid)
