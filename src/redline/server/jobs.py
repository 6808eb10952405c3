"""Long work as jobs: started in the server's task group, waited on for a bounded time, kept on disk.

    jobs = Jobs(workspace / ".redline" / "jobs", task_group, stop_server)
    await jobs.recover()                        # jobs a dead server left "running" -> "interrupted"
    record = await jobs.start("rung_run", op, ladder="l.yml", target="local")
    record = await jobs.wait(record.id, 20, report)   # finished, or still running after 20 s
    await jobs.cancel(record.id)                # cancels op; its servers are stopped

A job file is `<id>.json` (job_files.py: the files and whose they are). A job records
the servers its operation started: first the run folder of each launch
(`JobContext.launching`, on disk before the launch), then its handle
(`JobContext.add_process`); the two steps and the launch between them are one unit
that a cancel waits for (toolkit.State.recording_target). A job that ends any way
but "succeeded" has those that are still alive stopped, through their target, and so
does the next server start for a job whose server died mid-run. Only one active job
per target (one GPU) and per ladder is allowed at a time.

A job whose owner runs on another host or in another PID namespace is never
judged from here: its target and ladder stay busy until its own server ends it.

Jobs do not know what their operations return: a result is any pydantic model,
kept as JSON; `JobView[R]` reads it back as the type the caller expects.
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from filelock import FileLock
from pydantic import BaseModel

from redline.errors import InputError, RedlineError, RunFailed
from redline.ledger.derived import check_file
from redline.ops.request_base import WAIT_MAX_S, JobState
from redline.server.job_files import JobFiles, Records
from redline.server.job_record import JobRecord, JobView, now
from redline.targets import Launch, ServerHandle

__all__ = ["JobContext", "JobRecord", "JobState", "JobView", "Jobs", "running_jobs"]

_log = logging.getLogger("redline.server.jobs")

WAIT_DEFAULT_S = 20.0
HEARTBEAT_S = 10.0  # a waiting call reports progress at least this often
SAVE_EVERY_S = 1.0  # progress alone is written to disk at most this often
CLEANUP_BOUND_S = 300.0  # how long stopping a finished job's leftovers may take
FILE_POLL_S = 1.0  # how often a wait on another server's job reads its file

_R = TypeVar("_R", bound=BaseModel)
# Stop a server a job recorded (a handle) or may have launched (a launch, found by its run folder);
# True: it was alive and is stopped now.
StopServer = Callable[[ServerHandle | Launch], Awaitable[bool]]


@dataclass
class _Live:
    """A job running in this server process."""

    record: JobRecord
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    cancel_requested: bool = False
    saved_at: float = 0.0


class JobContext:
    """What an operation gets: a progress callback and a place to record the servers it starts."""

    def __init__(self, jobs: Jobs, live: _Live) -> None:
        self._jobs = jobs
        self._live = live

    @property
    def job_id(self) -> str:
        return self._live.record.id

    async def progress(self, fraction: float, message: str) -> None:
        """Record progress (0 to 1, never going back) and wake whoever waits on the job."""
        record = self._live.record
        record.progress = max(record.progress, min(max(float(fraction), 0.0), 1.0))
        record.message = str(message)[:500]
        self._jobs._changed(self._live, force_save=False)

    async def launching(self, launch: Launch) -> None:
        """Note, on disk, a server about to be launched: a redline killed mid-launch leaves this to find it by."""
        self._live.record.launches.append(launch)
        self._jobs._changed(self._live, force_save=True)

    async def add_process(self, handle: ServerHandle) -> None:
        """Note a server the operation started, before anything else can go wrong; its launch note goes."""
        record = self._live.record
        record.processes.append(handle)
        record.launches = [launch for launch in record.launches if launch.run_dir != handle.run_dir]
        self._jobs._changed(self._live, force_save=True)


Operation = Callable[[JobContext], Awaitable[_R]]  # any result model: a rung outcome, a campaign's, ...
Report = Callable[[JobRecord, float], Awaitable[None]]


class Jobs(JobFiles):
    """The job files of one workspace (JobFiles), and the jobs this server process runs."""

    def __init__(self, root: Path, task_group: TaskGroup, stop_server: StopServer) -> None:
        self._tg = task_group
        self._stop_server = stop_server
        self._live: dict[str, _Live] = {}
        self._cleanups: dict[str, anyio.Event] = {}  # target -> set when the interrupted jobs' leftovers are stopped
        self._starting = anyio.Lock()
        super().__init__(root)

    def _live_record(self, job_id: str) -> JobRecord | None:
        live = self._live.get(job_id)
        return live.record if live else None

    # ---- running -------------------------------------------------------------------

    def active(self, *, ladder: str | None = None, target: str | None = None) -> JobRecord | None:
        """An active job on that ladder or target, run by this server or by another live one on this workspace."""

        def same(r: JobRecord) -> bool:
            return r.active and bool((ladder and r.ladder == ladder) or (target and r.target == target))

        for live in list(self._live.values()):  # a snapshot: start() runs this in a worker thread
            if same(live.record):
                return live.record
        for record in self.list(limit=10**9):
            if same(record) and record.id not in self._live and self._owner_alive(record):
                return record
        return None

    async def start(
        self,
        tool: str,
        operation: Operation[_R],
        *,
        ladder: str | None = None,
        target: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> JobRecord:
        """Start operation as a job; refused while another job runs on the same ladder or target."""
        async with self._starting:  # one start at a time in this process; the file work off the event loop
            record, orphans = await anyio.to_thread.run_sync(
                functools.partial(self._create, tool, ladder=ladder, target=target, args=args)
            )
            self._schedule_cleanups(orphans)  # even when the start is refused: they are interrupted on disk
            if isinstance(record, InputError):
                raise record
            live = _Live(record)
            self._live[record.id] = live
        self._tg.start_soon(self._run, live, operation, name=f"job {record.id}")
        return record.model_copy(deep=True)

    def _create(
        self,
        tool: str,
        *,
        ladder: str | None,
        target: str | None,
        args: dict[str, Any] | None,
    ) -> tuple[JobRecord | InputError, Records]:
        """The new job's record, on disk (or why it is refused), and the orphans found on the way (marked
        interrupted on disk); under the start lock, which may wait on another server: so, in a worker thread."""
        with self._start_lock():  # two servers on one workspace must not both pass the check
            orphans = self._mark_interrupted([r for r in self.list(limit=10**9) if self._orphaned(r)])
            busy = self.active(ladder=ladder, target=target)
            if busy is not None:
                by = "" if busy.id in self._live else f", run by another redline server {self._owner_text(busy)}"
                return InputError(
                    f"job {busy.id} ({busy.tool}{f' on ladder {busy.ladder}' if busy.ladder else ''}, target "
                    f"{busy.target}) is still "
                    f"{busy.state}{by}; one job at a time per ladder and per target: wait for it with job_status or "
                    f"stop it with job_cancel{self._gone_hint(busy)}"
                ), orphans
            job_id = datetime.now(UTC).strftime("j-%Y%m%dT%H%M%SZ-") + secrets.token_hex(4)
            me = self.owner
            record = JobRecord(
                id=job_id,
                tool=tool,
                state="queued",
                ladder=ladder,
                target=target,
                args=args or {},
                owner_pid=me.pid,
                owner_start_ticks=me.start_ticks,
                owner_host=me.host,
                owner_boot_id=me.boot_id,
                owner_pid_ns=me.pid_ns,
                created_at=now(),
            )
            self._save(record)
        return record, orphans

    def _start_lock(self) -> FileLock:
        lock = self.root / ".start.lock"
        check_file(lock)  # a symlink or FIFO there is refused, not followed
        return FileLock(lock, timeout=30)

    async def _run(self, live: _Live, operation: Operation[BaseModel]) -> None:
        record = live.record
        outcome: tuple[JobState, dict[str, Any] | None, str | None] | None = None
        try:
            with live.scope:
                cleanup = self._cleanups.get(record.target or "")
                if cleanup is not None and not cleanup.is_set():
                    record.message = f"waiting until the servers an interrupted job left on {record.target} are stopped"
                    self._changed(live, force_save=True)
                    await cleanup.wait()
                record.state, record.started_at = "running", now()
                self._changed(live, force_save=True)
                done = await operation(JobContext(self, live))
                outcome = ("succeeded", done.model_dump(mode="json"), None)
        except RunFailed as exc:  # measured nothing usable: failed, with the answer naming the cause and the fix
            kept = exc.result.model_dump(mode="json") if exc.result is not None else None
            outcome = ("failed", kept, str(exc))
        except RedlineError as exc:
            outcome = ("failed", None, str(exc))
        except Exception as exc:
            _log.exception("job %s (%s) raised an unexpected error", record.id, record.tool)
            outcome = ("failed", None, f"unexpected {type(exc).__name__}: {exc}; the server log has the traceback")
        finally:
            # None: cancelled, by job_cancel or by this server shutting down
            final = outcome or (
                ("cancelled", None, "cancelled by job_cancel")
                if live.cancel_requested
                else ("interrupted", None, "the redline server shut down while this job ran")
            )
            with anyio.CancelScope(shield=True) as shield:
                shield.deadline = anyio.current_time() + CLEANUP_BOUND_S
                await self._finish(live, *final)

    async def _finish(self, live: _Live, state: JobState, result: dict[str, Any] | None, error: str | None) -> None:
        record = live.record
        if state != "succeeded":
            stopped = await self._stop_leftovers(record)
            if stopped:
                error = f"{error}; stopped {stopped} server process(es) it had started"
        record.state, record.result, record.error, record.finished_at = state, result, error, now()
        if state == "succeeded":
            record.progress = 1.0
        try:
            self._changed(live, force_save=True)
        finally:
            live.done.set()
            self._live.pop(record.id, None)

    async def _stop_leftovers(self, record: JobRecord) -> int:
        stopped = 0
        for leftover in record.leftovers():
            try:
                stopped += bool(await self._stop_server(leftover))
            except Exception as exc:  # keep going: the other handles still need stopping
                what = f"{leftover.describe()} on {leftover.target}"
                _log.error("could not stop %s (job %s): %s", what, record.id, exc)
                record.error = f"{record.error or ''}; could not stop {what}: {exc}".lstrip("; ")
        return stopped

    def _changed(self, live: _Live, *, force_save: bool) -> None:
        now = time.monotonic()
        if force_save or now - live.saved_at >= SAVE_EVERY_S:
            self._save(live.record)
            live.saved_at = now
        changed, live.changed = live.changed, anyio.Event()
        changed.set()

    async def wait(self, job_id: str, wait_s: float, report: Report | None = None) -> JobRecord:
        """Wait up to wait_s for the job to finish, reporting progress; the record either way."""
        record = await self._get(job_id)
        live = self._live.get(job_id)
        t0 = time.monotonic()
        deadline = t0 + min(max(wait_s, 0.0), WAIT_MAX_S)
        if live is None:
            return await self._wait_on_file(record, deadline, t0, report)
        while not live.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            changed = live.changed
            with anyio.move_on_after(min(left, HEARTBEAT_S)):
                await changed.wait()
            if report is not None and not live.done.is_set():
                await report(live.record, time.monotonic() - t0)
        return await self._get(job_id) if job_id in self._live else live.record.model_copy(deep=True)

    async def _wait_on_file(self, record: JobRecord, deadline: float, t0: float, report: Report | None) -> JobRecord:
        """A job another server runs: read its file once a second until it ends, its owner dies, or time is up."""
        while record.active:
            if self._orphaned(record):
                self._interrupt([record])
                return await self._get(record.id)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await anyio.sleep(min(left, FILE_POLL_S))
            record = await self._get(record.id)
            if report is not None and record.active:
                await report(record, time.monotonic() - t0)
        return record

    async def cancel(self, job_id: str) -> JobRecord:
        """Cancel a job this server runs and wait until its servers are stopped; a finished job is left as it is."""
        record = await self._get(job_id)
        live = self._live.get(job_id)
        if live is None:
            if record.active:
                raise InputError(
                    f"job {job_id} is run by another redline server {self._owner_text(record)}; "
                    f"cancel it through that server{self._gone_hint(record)}"
                )
            return record
        live.cancel_requested = True
        live.scope.cancel()
        await live.done.wait()
        return live.record.model_copy(deep=True)

    # ---- start and stop of the server ----------------------------------------------

    async def recover(self) -> Records:
        """Mark the jobs a dead server left active as interrupted; stop their servers in the background."""
        return self._interrupt([r for r in self.list(limit=10**9) if self._orphaned(r)])

    def _interrupt(self, records: Records) -> Records:
        """Orphaned jobs -> interrupted, on disk at once; the servers they started are stopped in the
        background, and new jobs on those targets wait for that."""
        return self._schedule_cleanups(self._mark_interrupted(records))

    def _mark_interrupted(self, records: Records) -> Records:
        for record in records:
            record.state, record.finished_at = "interrupted", now()
            record.error = (
                f"the redline server that ran this job (pid {record.owner_pid}) stopped before it "
                f"finished; {len(record.leftovers())} server process(es) it started are being stopped"
            )
            self._save(record)
        return records

    def _schedule_cleanups(self, records: Records) -> Records:
        """On the event loop: stop, in the background, what interrupted jobs left running."""
        by_target: dict[str, Records] = {}
        for record in records:
            if record.leftovers():
                by_target.setdefault(record.target or "", []).append(record)
        for target, found in by_target.items():
            self._cleanups[target] = event = anyio.Event()
            self._tg.start_soon(self._cleanup, found, event, name=f"cleanup on {target}")
        return records

    async def _cleanup(self, records: Records, event: anyio.Event) -> None:
        """Stop what interrupted jobs left running on one target; new jobs there wait for this."""
        try:
            with anyio.CancelScope(shield=True) as shield:
                shield.deadline = anyio.current_time() + CLEANUP_BOUND_S
                for record in records:
                    stopped = await self._stop_leftovers(record)
                    record.error = (record.error or "").replace(" are being stopped", f": {stopped} stopped")
                    self._save(record)
                    _log.info("stopped %d server process(es) left by interrupted job %s", stopped, record.id)
        finally:
            event.set()

    async def shutdown(self) -> None:
        """Cancel the jobs this server runs (they end "interrupted", their servers stopped) and wait for them."""
        for live in list(self._live.values()):
            live.scope.cancel()
        for live in list(self._live.values()):
            await live.done.wait()


@asynccontextmanager
async def running_jobs(root: Path, stop_server: StopServer) -> AsyncIterator[Jobs]:
    """Jobs with a task group of their own: recovered on entry, cancelled and waited for on exit."""
    async with anyio.create_task_group() as tg:
        jobs = Jobs(root, tg, stop_server)
        await jobs.recover()
        try:
            yield jobs
        finally:
            with anyio.CancelScope(shield=True):
                await jobs.shutdown()
