"""The job machinery with small operations of its own and real `sleep` processes as the servers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from redline.errors import InputError, LadderError, RunFailed
from redline.server.jobs import JobContext, JobRecord, JobView, running_jobs
from redline.targets import LocalTarget, ServerHandle
from tests.conftest import pid_running

pytestmark = pytest.mark.anyio


class Done(BaseModel):
    value: int


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalTarget]:
    async with LocalTarget("local", workdir=str(tmp_path / "target")) as target:
        yield target


@pytest.fixture
def stop(local: LocalTarget) -> tuple[list[ServerHandle], object]:
    stopped: list[ServerHandle] = []

    async def stop_process(handle: ServerHandle) -> bool:
        if not await local.is_alive(handle):
            return False
        await local.stop(handle, grace_s=2)
        stopped.append(handle)
        return True

    return stopped, stop_process


async def sleeper(target: LocalTarget) -> ServerHandle:
    return await target.start(
        [sys.executable, "-c", "import time; time.sleep(600)"], env={}, cwd=None, log_path="s.log"
    )


async def test_a_quick_job_returns_its_result_within_the_wait(tmp_path: Path, stop) -> None:
    async def op(ctx: JobContext) -> Done:
        await ctx.progress(0.5, "half way")
        return Done(value=7)

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        record = await jobs.start("rung_run", op, ladder="l.yml", target="local")
        assert record.state == "queued"
        record = await jobs.wait(record.id, 5)
    assert record.state == "succeeded" and record.result == {"value": 7} and record.progress == 1.0
    on_disk = json.loads((tmp_path / "jobs" / f"{record.id}.json").read_text())
    assert on_disk["state"] == "succeeded" and on_disk["result"] == {"value": 7}
    assert sorted(p.name for p in (tmp_path / "jobs").iterdir()) == [
        ".start.lock",
        f"{record.id}.json",
    ]  # no temp files


async def test_a_long_job_returns_its_id_then_reports_progress_until_it_ends(tmp_path: Path, stop) -> None:
    gate = anyio.Event()

    async def op(ctx: JobContext) -> Done:
        await ctx.progress(0.25, "booting")
        await gate.wait()
        await ctx.progress(0.75, "almost")
        return Done(value=1)

    seen: list[tuple[str, float]] = []

    async def report(record: JobRecord, elapsed: float) -> None:
        seen.append((record.message, record.progress))

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        job = await jobs.start("rung_run", op, ladder="l.yml", target="local")
        first = await jobs.wait(job.id, 0.3, report)
        assert first.state == "running" and not JobView.of(first).done
        assert "job_status" in JobView.of(first).hint
        assert ("booting", 0.25) in seen
        assert jobs.get(job.id).message == "booting"
        gate.set()
        final = await jobs.wait(job.id, 5, report)
    assert final.state == "succeeded" and final.result == {"value": 1}


async def test_cancel_stops_the_server_the_job_started(tmp_path: Path, local: LocalTarget, stop) -> None:
    started: list[ServerHandle] = []

    async def op(ctx: JobContext) -> Done:
        handle = await sleeper(local)
        started.append(handle)
        await ctx.add_process(handle)
        await anyio.sleep_forever()
        raise AssertionError

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        job = await jobs.start("rung_run", op, ladder="l.yml", target="local")
        while not started:
            await anyio.sleep(0.01)
        assert pid_running(started[0].locator.pid)
        record = await jobs.cancel(job.id)
        assert await jobs.cancel(job.id) == record  # cancelling twice changes nothing
    assert record.state == "cancelled" and "stopped 1 server process" in record.error
    assert not pid_running(started[0].locator.pid) and stop[0] == started


async def test_a_failed_job_keeps_its_message_and_stops_its_server(tmp_path: Path, local: LocalTarget, stop) -> None:
    async def op(ctx: JobContext) -> Done:
        await ctx.add_process(await sleeper(local))
        raise LadderError("the ladder's next step is smoke_test, not a boot")

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        record = await jobs.wait((await jobs.start("rung_run", op, target="local")).id, 5)
    assert record.state == "failed"
    assert record.error.startswith("the ladder's next step is smoke_test, not a boot")
    assert not pid_running(record.processes[0].locator.pid)


async def test_an_unexpected_exception_fails_the_job_not_the_server(tmp_path: Path, stop) -> None:
    async def op(ctx: JobContext) -> Done:
        raise ZeroDivisionError("boom")

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        record = await jobs.wait((await jobs.start("smoke_test", op)).id, 5)
        ok = await jobs.wait((await jobs.start("smoke_test", _quick)).id, 5)
    assert record.state == "failed" and "unexpected ZeroDivisionError: boom" in record.error
    assert ok.state == "succeeded"


async def test_a_run_that_measured_nothing_usable_fails_and_keeps_its_answer(tmp_path: Path, stop) -> None:
    async def op(ctx: JobContext) -> Done:
        raise RunFailed("every trial failed (2 of 2): c=4: flagged. Fix: empty the cache", Done(value=7))

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        record = await jobs.wait((await jobs.start("ab_run", op)).id, 5)
    assert (
        record.state == "failed" and record.error == "every trial failed (2 of 2): c=4: flagged. Fix: empty the cache"
    )
    view = JobView[Done].of(record)  # job_status: failed, the answer kept beside the error
    assert view.result == Done(value=7) and view.hint.startswith("failed: every trial failed (2 of 2)")


async def _quick(ctx: JobContext) -> Done:
    return Done(value=0)


async def test_one_job_at_a_time_per_target_and_per_ladder(tmp_path: Path, stop) -> None:
    async def op(ctx: JobContext) -> Done:
        await anyio.sleep_forever()
        raise AssertionError

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        first = await jobs.start("rung_run", op, ladder="a.yml", target="gpu0")
        with pytest.raises(InputError, match=f"job {first.id} .* is still queued|job {first.id} .* is still running"):
            await jobs.start("rung_run", op, ladder="b.yml", target="gpu0")
        with pytest.raises(InputError, match="one job at a time per ladder and per target"):
            await jobs.start("smoke_test", op, ladder="a.yml", target="gpu1")
        other = await jobs.start("rung_run", _quick, ladder="c.yml", target="gpu2")
        assert (await jobs.wait(other.id, 5)).state == "succeeded"
        await jobs.cancel(first.id)
        again = await jobs.start("rung_run", _quick, ladder="a.yml", target="gpu0")
        assert (await jobs.wait(again.id, 5)).state == "succeeded"


async def test_server_shutdown_interrupts_running_jobs_and_stops_their_servers(tmp_path: Path, local, stop) -> None:
    handles: list[ServerHandle] = []

    async def op(ctx: JobContext) -> Done:
        handles.append(await sleeper(local))
        await ctx.add_process(handles[-1])
        await anyio.sleep_forever()
        raise AssertionError

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        job = await jobs.start("rung_run", op, target="local")
        while not handles:
            await anyio.sleep(0.01)
    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        record = jobs.get(job.id)
    assert record.state == "interrupted" and "shut down" in record.error
    assert not pid_running(handles[0].locator.pid)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


async def test_restart_marks_a_dead_servers_jobs_interrupted_and_stops_their_servers(
    tmp_path: Path, local: LocalTarget, stop
) -> None:
    orphan = await sleeper(local)
    owner = subprocess.Popen(["sleep", "600"])  # a live "server" that still owns its job
    try:
        root = tmp_path / "jobs"
        root.mkdir()
        common = dict(tool="rung_run", state="running", target="local", created_at="2026-11-30T10:00:00+00:00")
        dead = JobRecord(
            id="j-20261130T100000Z-0000dead", owner_pid=dead_pid(), owner_start_ticks=1, processes=[orphan], **common
        )
        owned = JobRecord(id="j-20261130T100000Z-00a11e00", owner_pid=owner.pid, owner_start_ticks=None, **common)
        for record in (dead, owned):
            (root / f"{record.id}.json").write_text(record.model_dump_json())

        async with running_jobs(root, stop[1]) as jobs:
            # a new job on the same target waits until the orphan is stopped
            job = await jobs.start("rung_run", _quick, ladder="x.yml", target="other")
            assert (await jobs.wait(job.id, 5)).state == "succeeded"
            for _ in range(200):
                if not pid_running(orphan.locator.pid):
                    break
                await anyio.sleep(0.05)
            recovered = jobs.get(dead.id)
            assert jobs.get(owned.id).state == "running"
        assert recovered.state == "interrupted" and f"pid {dead.owner_pid}" in recovered.error
        assert not pid_running(orphan.locator.pid)
        assert "1 stopped" in json.loads((root / f"{dead.id}.json").read_text())["error"]
    finally:
        owner.kill()
        owner.wait()


async def test_a_job_waits_for_the_cleanup_of_its_target(tmp_path: Path, local: LocalTarget, stop) -> None:
    orphan = await sleeper(local)
    root = tmp_path / "jobs"
    root.mkdir()
    dead = JobRecord(
        id="j-20261130T100000Z-0000dead",
        tool="rung_run",
        state="running",
        target="local",
        owner_pid=dead_pid(),
        owner_start_ticks=1,
        created_at="2026-11-30T10:00:00+00:00",
        processes=[orphan],
    )
    (root / f"{dead.id}.json").write_text(dead.model_dump_json())

    async def op(ctx: JobContext) -> Done:
        return Done(value=int(pid_running(orphan.locator.pid)))

    async with running_jobs(root, stop[1]) as jobs:
        record = await jobs.wait((await jobs.start("rung_run", op, target="local")).id, 30)
    assert record.state == "succeeded" and record.result == {"value": 0}


@pytest.mark.parametrize("job_id", ["../../etc/passwd", "j-1/../../x", "/tmp/j", "", "J-20261130T100000Z-00000000"])
async def test_job_id_outside_the_job_folder_is_refused(tmp_path: Path, stop, job_id: str) -> None:
    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        for call in (jobs.get, jobs.cancel):
            with pytest.raises(InputError, match="is not a job id"):
                result = call(job_id)
                if hasattr(result, "__await__"):
                    await result


async def test_an_unknown_job_says_where_to_look(tmp_path: Path, stop) -> None:
    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        with pytest.raises(InputError, match="job_list"):
            jobs.get("j-20261130T100000Z-00000000")


async def test_job_list_is_newest_first_and_filters_by_state(tmp_path: Path, stop) -> None:
    async def fail(ctx: JobContext) -> Done:
        raise LadderError("no")

    async with running_jobs(tmp_path / "jobs", stop[1]) as jobs:
        ids = []
        for op in (_quick, fail, _quick):
            ids.append((await jobs.wait((await jobs.start("rung_run", op)).id, 5)).id)
            await anyio.sleep(0.002)  # created_at has milliseconds
        (tmp_path / "jobs" / "j-20261130T100000Z-0badf11e.json").write_text("{not json")
        assert [r.id for r in jobs.list()] == ids[::-1]
        assert [r.id for r in jobs.list(state="failed")] == [ids[1]]
        assert [r.id for r in jobs.list(limit=1)] == [ids[2]]


def _write(root: Path, record: JobRecord) -> None:
    (root / f"{record.id}.json").write_text(record.model_dump_json())


async def test_a_job_another_live_server_runs_is_respected(
    tmp_path: Path, stop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers on one workspace: the other's job blocks this one's target, can be waited on, not cancelled."""
    monkeypatch.setattr("redline.server.jobs.FILE_POLL_S", 0.05)
    owner = subprocess.Popen(["sleep", "600"])
    root = tmp_path / "jobs"
    try:
        async with running_jobs(root, stop[1]) as jobs:
            theirs = JobRecord(
                id="j-20261130T100000Z-0000abcd",
                tool="rung_run",
                state="running",
                ladder="l.yml",
                target="local",
                owner_pid=owner.pid,
                created_at="2026-11-30T10:00:00+00:00",
            )
            _write(root, theirs)
            with pytest.raises(InputError, match="j-20261130T100000Z-0000abcd .* is still running"):
                await jobs.start("rung_run", _quick, ladder="other.yml", target="local")
            with pytest.raises(InputError, match=f"another redline server \\(pid {owner.pid}\\)"):
                await jobs.cancel(theirs.id)
            seen: list[str] = []

            async def report(record: JobRecord, elapsed: float) -> None:
                seen.append(record.message)

            async def finish_later() -> None:
                await anyio.sleep(0.3)
                _write(root, theirs.model_copy(update={"state": "succeeded", "result": {"value": 3}}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(finish_later)
                done = await jobs.wait(theirs.id, 5, report)
            assert done.state == "succeeded" and done.result == {"value": 3} and seen
    finally:
        owner.kill()
        owner.wait()


async def test_a_wait_on_a_job_whose_server_died_marks_it_interrupted(tmp_path: Path, local: LocalTarget, stop) -> None:
    root = tmp_path / "jobs"
    async with running_jobs(root, stop[1]) as jobs:
        orphan = await sleeper(local)
        dead = JobRecord(
            id="j-20261130T100000Z-0000dead",
            tool="rung_run",
            state="running",
            target="local",
            owner_pid=dead_pid(),
            owner_start_ticks=1,
            created_at="2026-11-30T10:00:00+00:00",
            processes=[orphan],
        )
        _write(root, dead)  # after this server started: only the wait can find it
        record = await jobs.wait(dead.id, 5)
        assert record.state == "interrupted"
        job = await jobs.start("rung_run", _quick, target="local")  # waits for the orphan's stop
        assert (await jobs.wait(job.id, 10)).state == "succeeded"
    assert not pid_running(orphan.locator.pid)
