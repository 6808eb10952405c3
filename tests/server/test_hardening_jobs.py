"""Hardening classes 5 and 7 through the real MCP server, in-process and over stdio, with real child processes.

5. No engine without a record: the launch is written in the job before the engine starts, and the launch
   and its record are one unit that a cancel or a shutdown waits for; a restart finds a launch a killed
   server left and stops it.
7. Jobs owned by host and process: a record names its owner's host, boot and PID namespace; a second server
   on the workspace from another host or PID namespace never marks the first one's jobs interrupted, never
   stops its engines, and refuses a second boot on the busy target. Old job files still read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from redline.errors import LadderError
from redline.identity import Owner, this_owner
from redline.ledger.server_record import ServerRecord
from redline.server.app import build_server
from redline.server.job_record import JobRecord, now
from redline.server.jobs import JobContext, running_jobs
from redline.targets import Launch, LocalTarget, PosixTarget, ServerHandle
from redline.targets.posix_scripts import LAUNCH_SCRIPT
from tests.conftest import pid_running
from tests.server.helpers import Env, call, call_error, fake_servers, new_ladder, write_targets
from tests.server.test_jobs import Done, dead_pid

pytestmark = pytest.mark.anyio
LADDER = "ladders/l8b.yml"
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


def stdio(env: Env, *, prefix: tuple[str, ...] = ()) -> StdioServerParameters:
    argv = [*prefix, sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


def job_file(env: Env, job_id: str) -> Path:
    return env.config.state_dir / "jobs" / f"{job_id}.json"


def write_job(env: Env, record: JobRecord) -> None:
    folder = env.config.state_dir / "jobs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{record.id}.json").write_text(record.model_dump_json())


async def wait_until(condition: Any, timeout: float = 20) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.05)


@pytest.fixture
async def sleepers(env: Env) -> AsyncIterator[list[ServerHandle]]:
    """Real detached servers on the env's local target; whatever a test leaves running is stopped after."""
    made: list[ServerHandle] = []
    yield made
    async with LocalTarget("local", workdir=str(env.root / "target")) as target:
        for handle in made:
            if await target.is_alive(handle):
                await target.stop(handle, grace_s=2)


async def sleeper(env: Env, made: list[ServerHandle], **start: Any) -> ServerHandle:
    async with LocalTarget("local", workdir=str(env.root / "target")) as target:
        handle = await target.start(SLEEPER, env={}, cwd=None, log_path="boot.log", **start)
    made.append(handle)
    return handle


# ---- 5. no engine without a record ------------------------------------------------------------------


@pytest.fixture
def launch_window(monkeypatch: pytest.MonkeyPatch) -> anyio.Event:
    """Each launch pauses after the engine is started and before start() returns its handle: the window
    in which a cancel used to leave an engine no record named. The event is set inside the window."""
    inside = anyio.Event()
    confirm = PosixTarget._confirm_leader

    async def slow_confirm(self: PosixTarget, pid: int) -> int | None:
        ticks = await confirm(self, pid)
        inside.set()
        await anyio.sleep(1.5)
        return ticks

    monkeypatch.setattr(PosixTarget, "_confirm_leader", slow_confirm)
    return inside


async def test_no_engine_without_a_record_the_run_folder_is_in_the_job_before_the_launch(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[bool, bool]] = []
    run = LocalTarget._exec

    async def spy(self: LocalTarget, argv: list[str], timeout_s: float) -> Any:
        if LAUNCH_SCRIPT in argv:  # the launch itself: what do the job files say at this moment?
            run_dir = argv[argv.index(LAUNCH_SCRIPT) + 2]
            notes = [json.loads(p.read_text()) for p in (env.config.state_dir / "jobs").glob("j-*.json")]
            seen.append(
                (any(n["run_dir"] == run_dir for note in notes for n in note["launches"]), Path(run_dir).exists())
            )
        return await run(self, argv, timeout_s)

    monkeypatch.setattr(LocalTarget, "_exec", spy)
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=60)
    assert seen == [(True, False)]  # on disk in the job, and the folder not made yet, when the launch ran
    record = json.loads(job_file(env, job["job_id"]).read_text())
    run_dir = Path(record["processes"][0]["run_dir"])
    assert record["launches"] == [] and (run_dir / "pid").is_file() and (run_dir / "ticks").is_file()


async def test_no_engine_without_a_record_a_cancel_between_launch_and_record_stops_the_engine(
    env: Env, launch_window: anyio.Event
) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="60")
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=0)
        await wait_until(launch_window.is_set)
        assert fake_servers(env.port)  # launched; start() has not returned its handle yet
        cancelled = await call(client, "job_cancel", job_id=job["job_id"])
    assert cancelled["state"] == "cancelled", cancelled
    record = json.loads(job_file(env, job["job_id"]).read_text())
    assert len(record["processes"]) == 1 and record["launches"] == []  # the cancel waited for the record
    assert not fake_servers(env.port)  # and the engine is stopped (by the boot's own cleanup, or the job's)


async def test_no_engine_without_a_record_a_shutdown_between_launch_and_record_stops_the_engine(
    env: Env, launch_window: anyio.Event
) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="60")
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=0)
        await wait_until(launch_window.is_set)
    record = json.loads(job_file(env, job["job_id"]).read_text())
    assert record["state"] == "interrupted" and len(record["processes"]) == 1 and record["launches"] == [], record
    assert not fake_servers(env.port)


async def test_no_engine_without_a_record_a_launch_a_killed_server_left_is_stopped_on_restart_over_stdio(
    env: Env, sleepers: list[ServerHandle]
) -> None:
    """A server killed (SIGKILL) between the launch and the handle's record left only the launch note:
    the run folder, with the pid and start time the launcher wrote. The next server finds and stops it."""
    target = LocalTarget("local", workdir=str(env.root / "target"))
    run_dir = target.new_run_dir()
    handle = await sleeper(env, sleepers, run_dir=run_dir, exclusive=True)
    me = this_owner()
    write_job(
        env,
        JobRecord(
            id="j-20261130T100000Z-0001a0c4",
            tool="rung_run",
            state="running",
            ladder=LADDER,
            target="local",
            owner_pid=dead_pid(),
            owner_start_ticks=1,
            owner_host=me.host,
            owner_boot_id=me.boot_id,
            owner_pid_ns=me.pid_ns,
            created_at=now(),
            launches=[Launch(target="local", run_dir=run_dir, log_path=f"{run_dir}/boot.log", at=now())],
        ),
    )
    assert pid_running(handle.locator.pid)
    async with Client(stdio(env)) as client:
        jobs = (await call(client, "job_list"))["jobs"]
        assert jobs[0]["state"] == "interrupted"
        await wait_until(lambda: not pid_running(handle.locator.pid))
        await wait_until(lambda: "1 stopped" in json.loads(job_file(env, jobs[0]["job_id"]).read_text())["error"])


async def test_no_engine_without_a_record_a_launch_that_started_nothing_is_harmless(env: Env, tmp_path: Path) -> None:
    """A launch note whose folder holds no pid (refused as busy, or killed before the launch): nothing to stop."""
    found: list[ServerHandle | None] = []

    async def stop(leftover: ServerHandle | Launch) -> bool:
        async with LocalTarget("local", workdir=str(env.root / "target")) as target:
            handle = await target.launched(leftover) if isinstance(leftover, Launch) else leftover
        found.append(handle)
        return handle is not None

    async def op(ctx: JobContext) -> Done:
        run_dir = LocalTarget("local", workdir=str(env.root / "target")).new_run_dir()
        await ctx.launching(Launch(target="local", run_dir=run_dir, log_path=f"{run_dir}/boot.log", at=now()))
        raise LadderError("refused before the launch")

    async with running_jobs(tmp_path / "jobs", stop) as jobs:
        record = await jobs.wait((await jobs.start("rung_run", op, target="local")).id, 5)
    assert record.state == "failed" and found == [None] and "stopped" not in (record.error or "")


# ---- 7. jobs owned by host and process ---------------------------------------------------------------


def foreign(**changes: Any) -> dict[str, Any]:
    """Owner fields of a redline elsewhere: by default this machine and boot, another PID namespace."""
    me = this_owner()
    fields = {"owner_host": me.host, "owner_boot_id": me.boot_id, "owner_pid_ns": "pid:[4026000001]"}
    return {**fields, **changes}


@pytest.mark.parametrize(
    "elsewhere",
    [{}, {"owner_host": "gpu-node-7/0123456789abcdef0123456789abcdef"}],
    ids=["another PID namespace", "another host"],
)
async def test_jobs_owned_by_host_and_process_another_servers_job_is_never_judged_from_here(
    env: Env, sleepers: list[ServerHandle], elsewhere: dict[str, str]
) -> None:
    """Its pid looks dead from here (it names nothing in this namespace): the job is still not interrupted,
    its engine is not stopped, and the target is busy for this server."""
    engine = await sleeper(env, sleepers)
    theirs = JobRecord(
        id="j-20261130T100000Z-0000f0e1",
        tool="rung_run",
        state="running",
        ladder=LADDER,
        target="local",
        owner_pid=dead_pid(),
        owner_start_ticks=1,
        created_at=now(),
        processes=[engine],
        **foreign(**elsewhere),
    )
    write_job(env, theirs)
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env, "ladders/other.yml")
        listed = (await call(client, "job_list"))["jobs"]
        assert [(j["job_id"], j["state"]) for j in listed] == [(theirs.id, "running")]
        busy = await call_error(client, "rung_run", ladder="ladders/other.yml", target="local", wait_s=5)
        assert theirs.id in busy and "another host or in another PID namespace" in busy
        refused = await call_error(client, "job_cancel", job_id=theirs.id)
        assert "cancel it through that server" in refused and "delete" in refused
        waited = await call(client, "job_status", job_id=theirs.id, wait_s=1.5)
        assert waited["state"] == "running"
    assert json.loads(job_file(env, theirs.id).read_text())["state"] == "running"
    assert pid_running(engine.locator.pid)  # never stopped from here


async def test_jobs_owned_by_host_and_process_two_jobs_instances_of_different_identity(
    env: Env, sleepers: list[ServerHandle], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two Jobs on one job folder, the first one as if in another PID namespace: the second never interrupts
    its job nor stops its server, and refuses a job on the same target; the first still ends its own."""
    stopped: list[ServerHandle] = []

    async def stop(leftover: Any) -> bool:
        async with LocalTarget("local", workdir=str(env.root / "target")) as target:
            if not await target.is_alive(leftover):
                return False
            await target.stop(leftover, grace_s=2)
        stopped.append(leftover)
        return True

    engine = await sleeper(env, sleepers)
    real = this_owner()
    other = Owner(host=real.host, boot_id=real.boot_id, pid_ns="pid:[4026000002]", pid=dead_pid(), start_ticks=1)

    async def op(ctx: JobContext) -> Done:
        await ctx.add_process(engine)
        await anyio.sleep_forever()
        raise AssertionError

    root = tmp_path / "jobs"
    async with running_jobs(root, stop) as first:
        monkeypatch.setattr(first, "owner", other)
        job = await first.start("rung_run", op, ladder="a.yml", target="local")
        await wait_until(lambda: first.get(job.id).processes)
        async with running_jobs(root, stop) as second:  # recover() ran: nothing of the first's touched
            assert second.get(job.id).state == "running" and second.get(job.id).owner_pid_ns == other.pid_ns
            with pytest.raises(Exception, match="another host or in another PID namespace"):
                await second.start("rung_run", op, ladder="b.yml", target="local")
            with pytest.raises(Exception, match="cancel it through that server"):
                await second.cancel(job.id)
        assert stopped == [] and pid_running(engine.locator.pid)
        ended = await first.cancel(job.id)
    assert ended.state == "cancelled" and stopped == [engine] and not pid_running(engine.locator.pid)


async def test_jobs_owned_by_host_and_process_this_machine_booted_again_means_the_owner_is_gone(
    env: Env, sleepers: list[ServerHandle]
) -> None:
    engine = await sleeper(env, sleepers)
    before = JobRecord(
        id="j-20261130T100000Z-0000b007",
        tool="rung_run",
        state="running",
        target="local",
        owner_pid=os.getpid(),
        owner_start_ticks=this_owner().start_ticks,
        created_at=now(),
        processes=[engine],
        **foreign(owner_boot_id="00000000-old-boot", owner_pid_ns=this_owner().pid_ns),
    )
    write_job(env, before)  # its pid is alive here, but in this boot it is another process
    async with Client(build_server(env.config)) as client:
        assert (await call(client, "job_status", job_id=before.id))["state"] == "interrupted"
        await wait_until(lambda: not pid_running(engine.locator.pid))


async def test_jobs_owned_by_host_and_process_old_job_files_without_identity_still_read(
    env: Env, sleepers: list[ServerHandle]
) -> None:
    """A job file as redline wrote it before records named their host (and with a flat handle): read, and
    judged by pid and start time as then."""
    engine = await sleeper(env, sleepers)
    loc = engine.locator
    old = {
        "id": "j-20261130T100000Z-0000001d",
        "tool": "rung_run",
        "state": "running",
        "ladder": LADDER,
        "target": "local",
        "args": {},
        "owner_pid": dead_pid(),
        "owner_start_ticks": 1,
        "created_at": "2026-11-30T10:00:00.000+00:00",
        "progress": 0.1,
        "message": "booting",
        "processes": [
            {
                "target": "local",
                "run_dir": engine.run_dir,
                "log_path": engine.log_path,
                "started_at": engine.started_at,
                "pid": loc.pid,
                "pgid": loc.pgid,
                "start_ticks": loc.start_ticks,
            }
        ],
    }
    folder = env.config.state_dir / "jobs"
    folder.mkdir(parents=True)
    (folder / f"{old['id']}.json").write_text(json.dumps(old))
    async with Client(build_server(env.config)) as client:
        job = await call(client, "job_status", job_id=old["id"])
        assert job["state"] == "interrupted" and f"pid {old['owner_pid']}" in job["error"]
        await wait_until(lambda: not pid_running(loc.pid))


async def test_jobs_owned_by_host_and_process_a_server_booted_in_another_pid_namespace_is_not_signalled(
    env: Env,
) -> None:
    """The ladder's running server (left up for its smoke test) was booted by a redline in another PID
    namespace: its pid names nothing here, so smoke_test and the next boot refuse to act on it."""
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env, policy="doubling")  # every rung is smoke-tested: it stays up for that
        await call(client, "rung_run", ladder=LADDER, target="local", wait_s=60)
        record_file = env.workspace / "ladders" / "l8b.runs" / "server.json"
        record = ServerRecord.model_validate_json(record_file.read_text())
        assert record.owner is not None and record.owner.pid == os.getpid()  # who booted it, recorded
        moved = record.owner.model_copy(update={"pid_ns": "pid:[4026000003]"})
        record_file.write_text(record.model_copy(update={"owner": moved}).model_dump_json())
        said = await call_error(client, "smoke_test", ladder=LADDER, wait_s=30)
        assert "another host or PID namespace" in said and "by hand" in said
    assert fake_servers(env.port)  # left alone (the env fixture stops it by its record after the test)


# ---- 7, for real: a second server in its own PID namespace (unshare) ------------------------------------


def can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=30, check=False
    )
    return done.returncode == 0


@pytest.fixture
def unshared() -> Iterator[tuple[str, ...]]:
    if not can_unshare():
        pytest.skip("needs root and unshare --pid --fork --mount-proc (the simulated-identity tests above still run)")
    yield ("unshare", "--pid", "--fork", "--mount-proc")


async def test_jobs_owned_by_host_and_process_a_server_in_its_own_pid_namespace_is_left_alone(
    env: Env, unshared: tuple[str, ...]
) -> None:
    """A real `redline mcp` in a new PID namespace runs a long boot on the shared workspace. This server sees
    its job and its engine (a pid in that namespace), and neither interrupts it nor stops it, and refuses
    a second boot on the target. The first server, shut down, ends its own job and stops its engine."""
    write_targets(env, FAKE_VLLM_BOOT_S="120")
    async with Client(stdio(env, prefix=unshared)) as theirs:
        await new_ladder(theirs, env)
        job = await call(theirs, "rung_run", ladder=LADDER, target="local", wait_s=1)
        assert not job["done"]
        record = json.loads(job_file(env, job["job_id"]).read_text())
        assert record["owner_pid_ns"] != this_owner().pid_ns and record["owner_pid"] < 100  # pid 1 is unshare's child
        await wait_until(lambda: fake_servers(env.port))
        engines = fake_servers(env.port)
        async with Client(build_server(env.config)) as ours:
            assert (await call(ours, "job_status", job_id=job["job_id"]))["state"] == "running"
            await new_ladder(ours, env, "ladders/other.yml")
            busy = await call_error(ours, "rung_run", ladder="ladders/other.yml", target="local", wait_s=5)
            assert job["job_id"] in busy and "another PID namespace" in busy
            assert "cancel it through that server" in await call_error(ours, "job_cancel", job_id=job["job_id"])
        assert fake_servers(env.port) == engines  # still running: not ours to stop
        assert json.loads(job_file(env, job["job_id"]).read_text())["state"] == "running"
    record = json.loads(job_file(env, job["job_id"]).read_text())
    assert record["state"] == "interrupted" and "shut down" in record["error"]
    assert not fake_servers(env.port)  # its own server stopped it
