"""Behaviour both targets share, run for real: on this host and through a real sshd."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from redline.errors import CommandTimeout, InputError, TargetPathError
from redline.targets import LocalTarget, ServerHandle, SSHTarget, Target
from tests.conftest import pid_running

from .conftest import PY, free_port, machine_id

pytestmark = pytest.mark.anyio

# Prints lines, its env and cwd, then exits with argv[1].
LINES = """
import os, sys
for i in range(3):
    print(f"line {i}", flush=True)
print("env", os.environ.get("REDLINE_T"), flush=True)
print("cwd", os.getcwd(), flush=True)
print("err line", file=sys.stderr, flush=True)
sys.exit(int(sys.argv[1]))
"""

# Forks a grandchild that ignores SIGTERM; once it does, the grandchild writes both pids.
GRANDCHILD = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getppid()} {os.getpid()}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""
TREE = f"""
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", {GRANDCHILD!r}, sys.argv[1]])
time.sleep(600)
"""

SLEEP = ["-c", "import time; time.sleep(600)"]


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


async def wait_for_file(path: Path, timeout_s: float = 10) -> str:
    with anyio.fail_after(timeout_s):
        while not path.exists():
            await anyio.sleep(0.02)
    return path.read_text()


async def started(
    target: Target,
    spawn: list[ServerHandle],
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    log_path: str = "server.log",
) -> ServerHandle:
    handle = await target.start(argv, env=env or {}, cwd=cwd, log_path=log_path)
    spawn.append(handle)
    return handle


def http_server(directory: Path, port: int) -> list[str]:
    return [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(directory)]


# ---- start, log, exit -------------------------------------------------------------


async def test_start_appends_output_env_and_cwd_to_log(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    prog = script(tmp_path, "lines.py", LINES)
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.write_text("earlier boot\n")
    handle = await started(
        target, spawn, [PY, prog, "0"], env={"REDLINE_T": "v 1"}, cwd=str(tmp_path), log_path=str(log)
    )
    assert (await target.wait_ready(handle, f"http://127.0.0.1:{free_port()}/health", 20, 0.05)).status == "exited"
    text = log.read_text()
    assert text.startswith("earlier boot\n")  # appended, not truncated
    assert "line 0\nline 1\nline 2\n" in text and "err line" in text
    assert f"env v 1\ncwd {tmp_path}\n" in text
    assert handle.locator.pgid == handle.locator.pid
    assert (Path(handle.run_dir) / "pid").read_text().strip() == str(handle.locator.pid)


async def test_relative_log_path_lands_in_the_run_folder(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    handle = await started(target, spawn, [PY, "-c", "print('hi')"], log_path="boot.log")
    await target.wait_ready(handle, f"http://127.0.0.1:{free_port()}/", 20, 0.05)
    assert handle.log_path == str(Path(handle.run_dir) / "boot.log")
    assert Path(handle.run_dir).parent == tmp_path / "work" / "runs"
    assert (await target.read_text(handle.log_path)) == "hi\n"


async def test_handle_survives_a_json_round_trip_and_a_new_target(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    again = ServerHandle.model_validate_json(handle.model_dump_json())
    assert again == handle
    async with _reopen(target) as fresh:  # as after a restart of redline
        assert await fresh.is_alive(again)
        await fresh.stop(again, grace_s=5)
        assert not await fresh.is_alive(again)
    assert not pid_running(handle.locator.pid)


async def test_a_handle_in_the_released_flat_shape_still_finds_its_server(
    target: Target, spawn: list[ServerHandle]
) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    loc = handle.locator
    flat = {  # as a job file of the released version holds it
        "target": handle.target,
        "pid": loc.pid,
        "pgid": loc.pgid,
        "run_dir": handle.run_dir,
        "log_path": handle.log_path,
        "started_at": handle.started_at,
        "start_ticks": loc.start_ticks,
    }
    old = ServerHandle.model_validate_json(json.dumps(flat))
    assert old == handle
    assert await target.is_alive(old)
    await target.stop(old, grace_s=5)
    assert not pid_running(loc.pid)


# ---- wait_ready -------------------------------------------------------------------


async def test_wait_ready_when_health_answers_200(target: Target, spawn: list[ServerHandle], tmp_path: Path) -> None:
    (tmp_path / "health").write_text("ok")
    port = free_port()
    handle = await started(target, spawn, http_server(tmp_path, port))
    outcome = await target.wait_ready(handle, f"http://127.0.0.1:{port}/health", 20, poll_s=0.05)
    assert outcome.status == "ready" and outcome.exit_code is None
    assert await target.is_alive(handle)
    # the same GET, from where the server's benches run, gives the body (a server's metrics): a 200's only
    assert await target.http_text(handle, f"http://127.0.0.1:{port}/health") == "ok"
    assert await target.http_text(handle, f"http://127.0.0.1:{port}/missing") is None


async def test_wait_ready_ignores_answers_other_than_200(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    port = free_port()  # no file named health: the server answers 404
    handle = await started(target, spawn, http_server(tmp_path, port))
    outcome = await target.wait_ready(handle, f"http://127.0.0.1:{port}/health", 1.5, poll_s=0.05)
    assert outcome.status == "timeout"
    assert "404" in await target.read_text(handle.log_path)  # it did answer, just not 200


async def test_wait_ready_reports_exit_and_its_code(target: Target, spawn: list[ServerHandle], tmp_path: Path) -> None:
    handle = await started(target, spawn, [PY, script(tmp_path, "lines.py", LINES), "3"])
    outcome = await target.wait_ready(handle, f"http://127.0.0.1:{free_port()}/health", 20, poll_s=0.05)
    assert (outcome.status, outcome.exit_code) == ("exited", 3)
    assert not await target.is_alive(handle)


async def test_wait_ready_reports_a_missing_program_as_exit_127(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, ["/nonexistent/vllm", "serve"])
    outcome = await target.wait_ready(handle, f"http://127.0.0.1:{free_port()}/", 20, poll_s=0.05)
    assert (outcome.status, outcome.exit_code) == ("exited", 127)


async def test_wait_ready_times_out_at_the_deadline(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    t0 = time.monotonic()
    outcome = await target.wait_ready(handle, f"http://127.0.0.1:{free_port()}/health", 0.6, poll_s=0.1)
    assert outcome.status == "timeout"
    assert 0.6 <= time.monotonic() - t0 < 5
    assert await target.is_alive(handle)  # a timeout does not stop anything


async def test_wait_ready_refuses_a_url_that_is_not_http(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    with pytest.raises(InputError, match="http"):
        await target.wait_ready(handle, "ftp://127.0.0.1/health", 1)


# ---- stop -------------------------------------------------------------------------


async def test_stop_kills_the_whole_group_and_nothing_else(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    bystander = subprocess.Popen([PY, *SLEEP])  # started by someone else, not by the target
    try:
        neighbour = await started(target, spawn, [PY, *SLEEP])
        pids_file = tmp_path / "pids"
        handle = await started(target, spawn, [PY, script(tmp_path, "tree.py", TREE), str(pids_file)])
        child, grandchild = map(int, (await wait_for_file(pids_file)).split())
        t0 = time.monotonic()
        await target.stop(handle, grace_s=0.5)  # the grandchild ignores SIGTERM: needs SIGKILL
        assert time.monotonic() - t0 >= 0.5
        assert not any(map(pid_running, (handle.locator.pid, child, grandchild)))
        assert pid_running(bystander.pid)
        assert await target.is_alive(neighbour)
    finally:
        bystander.kill()
        bystander.wait()


async def test_stop_with_sigterm_alone_does_not_wait_for_the_grace(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    t0 = time.monotonic()
    await target.stop(handle, grace_s=30)
    assert time.monotonic() - t0 < 10
    assert not pid_running(handle.locator.pid)


async def test_stop_is_idempotent(target: Target, spawn: list[ServerHandle], tmp_path: Path) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    await target.stop(handle, grace_s=5)
    await target.stop(handle, grace_s=5)
    exited = await started(target, spawn, [PY, "-c", "pass"])
    await target.wait_ready(exited, f"http://127.0.0.1:{free_port()}/", 20, 0.05)
    await target.stop(exited)  # already gone by itself
    assert not await target.is_alive(handle) and not await target.is_alive(exited)


async def test_stop_leaves_a_reused_pid_alone(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    assert handle.locator.start_ticks is not None
    older = handle.locator.model_copy(update={"start_ticks": handle.locator.start_ticks - 1})
    stale = handle.model_copy(update={"locator": older})  # "an older process with this pid"
    await target.stop(stale, grace_s=0)
    assert pid_running(handle.locator.pid)
    assert not await target.is_alive(stale)


async def test_stop_refuses_a_handle_of_another_target(target: Target, spawn: list[ServerHandle]) -> None:
    handle = await started(target, spawn, [PY, *SLEEP])
    foreign = handle.model_copy(update={"target": "elsewhere"})
    with pytest.raises(InputError, match="elsewhere"):
        await target.stop(foreign, grace_s=0)
    assert pid_running(handle.locator.pid)


# ---- injection guards -------------------------------------------------------------

NASTY = [
    "; touch {m}",
    "$(touch {m})",
    "`touch {m}`",
    "a b",
    "'q'",
    '"dq"',
    "\\",
    "*",
    "-rf",
    "--",
    "x\ny",
    "",
    "$HOME",
    "|| touch {m} &",
]


async def test_start_argv_env_and_log_path_are_not_shell_interpreted(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    args = [a.format(m=marker) for a in NASTY]
    code = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['V']]))"
    handle = await started(
        target, spawn, [PY, "-c", code, *args], env={"V": f"$(touch {marker})"}, log_path=f"x; touch {marker}"
    )
    await target.wait_ready(handle, f"http://127.0.0.1:{free_port()}/", 20, 0.05)
    assert json.loads(await target.read_text(handle.log_path)) == [args, f"$(touch {marker})"]
    assert Path(handle.log_path).name == f"x; touch {marker}".rsplit("/", 1)[-1]
    assert not marker.exists()


async def test_run_argv_and_cwd_are_not_shell_interpreted(target: Target, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    args = [a.format(m=marker) for a in NASTY]
    result = await target.run([PY, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *args], env={"A": "1"})
    assert json.loads(result.stdout) == args
    with pytest.raises(TargetPathError):
        await target.run(["true"], cwd=f"/nonexistent; touch {marker}")
    assert not marker.exists()


async def test_env_names_a_shell_could_misread_are_refused(target: Target, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(InputError, match="environment names"):
        await target.start([PY, *SLEEP], env={f"A=1; touch {marker}; B": "x"}, cwd=None, log_path="l")
    with pytest.raises(InputError):
        await target.run(["true"], env={"A B": "x"})
    assert not marker.exists() and not (tmp_path / "work").exists()


# ---- run, files, host -------------------------------------------------------------


async def test_run_returns_output_and_exit_code(target: Target, tmp_path: Path) -> None:
    code = "import os, sys; print('out', os.environ['E'], os.getcwd()); " + "print('err', file=sys.stderr); sys.exit(4)"
    result = await target.run([PY, "-c", code], env={"E": "v w"}, cwd=str(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (4, f"out v w {tmp_path}\n", "err\n")
    assert (await target.run(["true"])).returncode == 0


async def test_run_reports_a_missing_program_as_127(target: Target) -> None:
    assert (await target.run(["/nonexistent/tool", "--help"])).returncode == 127


async def test_run_timeout_raises_and_leaves_nothing_running(target: Target, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout, match="within 0.5s"):
        await target.run([PY, "-c", code, str(pid_file)], timeout_s=0.5)
    assert time.monotonic() - t0 < 5
    assert not pid_running(int(pid_file.read_text()))


async def test_read_text_and_fetch(target: Target, tmp_path: Path) -> None:
    src = tmp_path / "remote" / "boot.log"
    src.parent.mkdir()
    src.write_bytes(b"KV cache \xff\x00 end\n")
    assert await target.read_text(str(src)) == "KV cache \ufffd\x00 end\n"
    dest = tmp_path / "here" / "deeper" / "boot.log"
    await target.fetch(str(src), str(dest))
    assert dest.read_bytes() == src.read_bytes()


async def test_missing_files_raise_target_path_error(target: Target, tmp_path: Path) -> None:
    with pytest.raises(TargetPathError, match="nope"):
        await target.read_text(str(tmp_path / "nope"))
    with pytest.raises(TargetPathError, match="nope"):
        await target.fetch(str(tmp_path / "nope"), str(tmp_path / "dest"))
    assert not (tmp_path / "dest").exists()


async def test_host_info_without_nvidia_smi(target: Target) -> None:
    if (await target.run(["sh", "-c", "command -v nvidia-smi"])).returncode == 0:
        pytest.skip("this host has nvidia-smi")
    info = await target.host_info()
    assert info.hostname == socket.gethostname()
    assert info.machine_id == machine_id()  # the same node either way: SSH goes to 127.0.0.1
    assert info.gpus == []


def _reopen(target: Target) -> Target:
    """A second target of the same name and settings, as a restarted redline would open."""
    if isinstance(target, LocalTarget):
        return LocalTarget(target.name, workdir=target.workdir)
    assert isinstance(target, SSHTarget)
    return SSHTarget(target.name, target.spec)
