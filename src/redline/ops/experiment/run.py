"""The experiment wing: one run of an experiment (a campaign, an A/B) on its target, a measured boot per unit.

    outcome = await run(plan, judge, target, progress=progress, widening=widening)   # the run, in a job
    outcome = await dry_run(plan, judge, target, progress=progress)                  # the plan, nothing started

An experiment is a plan and a judge over one results layout (ledger/results.py). The plan says what to boot: its
units (one measured boot each: a campaign's cell, an A/B's trial of an arm), which to boot next given what this run
has measured (a grid's next cell, a search's proposal, an A/B's next trial; or why to stop), each unit's benches
and what it runs after them on the same server (a campaign's load-boundary probes, an A/B's accuracy gate). The
judge says what a unit's boot gave (its record, written last: its presence means the unit is done) and what the
whole run gave (the tool's answer).

The run holds the experiment's lock (one runner; the OS drops a killed runner's), stops every server a killed run
left on record, then boots the plan's units in its order, up to `parallel` at once, each through the one
measurement loop (ops/measured_boot.py) on a session of its own; progress is the mean of the units' own.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import anyio
from filelock import FileLock, Timeout
from pydantic import BaseModel

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.errors import InputError, RedlineError
from redline.inputs import read_text
from redline.ledger.results import Results
from redline.models import ServeConfig, Widenings
from redline.models.experiment import ExperimentSpec
from redline.ops.measured_boot import Keep, MeasuredBoot, Then, measured_boot, stop_left_servers
from redline.ops.predict.recorded import record_written
from redline.ops.session import Progress, ServeSession, say
from redline.policy.workload import Bench
from redline.targets import HostInfo, Target
from redline.targets.unit import boot_unit

MAX_LOG = 64 << 20  # a boot log read for its boot time: past any real one
_R = TypeVar("_R", bound=BaseModel)  # a unit's record: a cell's verdict, a trial's record
_R_contra = TypeVar("_R_contra", bound=BaseModel, contravariant=True)
_A = TypeVar("_A")  # the run's answer
_A_co = TypeVar("_A_co", covariant=True)
Write = Callable[[str, str], object]  # (file name, text): a file beside the unit's other results


@dataclass(frozen=True)
class Unit:
    """One measured boot an experiment plans: a cell of a campaign, a trial of an A/B's arm."""

    name: str  # its folder under the layout's units: a cell's name, a trial's <arm>-<k>
    index: int  # the number its server record carries (a cell's index, a trial's order)
    engine: str
    serve: ServeConfig


@dataclass(frozen=True)
class Stop:
    """Nothing more to boot, and why (None: every unit planned was booted)."""

    why: str | None = None


class Experiment(Protocol):
    """What the wing reads of every kind of experiment (ops/experiment/prepare.py Kind): what messages call it, its
    spec, where its units' records are, the workspace it runs in."""

    word: str  # campaign, A/B, probe

    @property
    def spec(self) -> ExperimentSpec: ...  # what every experiment says: its name, deadlines, workloads

    @property
    def results(self) -> Results: ...

    @property
    def workspace(self) -> Path: ...  # the one it runs in: each unit's record joins its recorded boots


class Plan(Protocol[_R_contra]):
    """What an experiment boots, and in which order."""

    @property
    def experiment(self) -> Experiment: ...  # the experiment it plans

    @property
    def parallel(self) -> int: ...  # units booted at once, each on a server of its own

    def todo(self) -> int: ...  # how many units this run boots at most (its progress counts them)

    # The unit to boot now, why to stop, or None: nothing until a running unit is judged. ran: this run's units (None
    # while running).
    def next(self, ran: Mapping[str, _R_contra | None]) -> Unit | Stop | None: ...

    def benches(self, unit: Unit) -> list[Bench]: ...

    def then(self, unit: Unit, session: ServeSession, write: Write) -> Then | None: ...

    def configs(self) -> dict[str, tuple[str, ServeConfig]]: ...  # each config a dry run previews: (engine, serve)


class Judge(Protocol[_R, _A_co]):
    """What a unit's boot gave, and what the run gave."""

    def record(self, unit: Unit, measured: MeasuredBoot, host: HostInfo, started: datetime, wall_s: float) -> _R: ...

    def said(self, record: _R) -> str: ...  # the unit's last progress line

    def outcome(self, made: list[_R], stop: Stop, wall_s: float) -> _A_co: ...

    def planned(self, submits: dict[str, str | None]) -> _A_co: ...  # a dry run's answer, each config's preview


# How a tool opens its experiment on a target: (target, dry run?, progress) -> its plan and its judge.
Opener = Callable[[Target, bool, Progress | None], Awaitable[tuple[Plan[Any], Judge[Any, _A]]]]


@asynccontextmanager
async def runner_lock(results: Results, tool: str, kind: str) -> AsyncIterator[None]:
    """One runner per experiment (`kind`: campaign, A/B); the OS drops the lock of a runner that is killed."""
    lock = FileLock(str(results.checked(results.lock_file, create=True)), timeout=0)  # real folders, a plain lock
    try:
        lock.acquire()
    except Timeout as exc:
        raise InputError(
            f"another {tool} is running this {kind} ({results.lock_file} is held): wait for it (job_status) or cancel "
            "its job"
        ) from exc
    try:
        yield
    finally:
        lock.release()


async def preview(plan: Plan[_R], judge: Judge[_R, _A], target: Target, progress: Progress | None) -> _A:
    """A dry run's answer: the plan, each config with what its boot would submit (a cluster's manifests); nothing
    started."""
    target.dry_run, target.experiment = True, plan.experiment.spec.name
    submits = {
        name: await ServeSession(target, get_engine(engine)).submission_preview(serve)
        for name, (engine, serve) in plan.configs().items()
    }
    await say(progress, 1.0, f"planned {plan.todo()} boots at most; none started")
    return judge.planned(submits)


async def run(
    plan: Plan[_R],
    judge: Judge[_R, _A],
    target: Target,
    *,
    tool: str,
    progress: Progress | None = None,
    widening: Widenings | None = None,
) -> _A:
    """Boot the plan's units until it stops, each measured and judged, its record written last; the run's answer."""
    experiment = plan.experiment
    target.experiment = experiment.spec.name  # a target that labels its servers (kubernetes) files them under it
    async with runner_lock(experiment.results, tool, experiment.word):
        return await _Run(plan, judge, target, progress, widening or {}).run()


async def start(
    opened: Opener[_A],
    target: Target,
    *,
    dry_run: bool,
    tool: str,
    progress: Progress | None = None,
    widening: Widenings | None = None,
) -> _A:
    """The experiment `opened` on target, then run; a dry run's preview instead (its progress from the opening on)."""
    plan, judge = await opened(target, dry_run, progress if dry_run else None)
    if dry_run:
        return await preview(plan, judge, target, progress)
    return await run(plan, judge, target, tool=tool, progress=progress, widening=widening)


def last_boot_s(results: Results, engine: Engine) -> float | None:
    """How long the newest ready boot this experiment kept took (its boot.log, read by its engine): what a new
    unit's boot progress moves against before this run measured one; None with none."""
    units = results.root / results.units
    logs = sorted(units.glob("*/boot.log"), key=lambda p: p.stat().st_mtime, reverse=True) if units.is_dir() else []
    for log in logs[:8]:
        try:
            took = engine.boot_seconds(read_text(log, "a unit's boot log", max_bytes=MAX_LOG))
        except RedlineError:
            continue
        if took:
            return took
    return None


@dataclass
class _Run(Generic[_R, _A]):
    plan: Plan[_R]
    judge: Judge[_R, _A]
    target: Target
    progress: Progress | None
    widening: Widenings

    async def run(self) -> _A:
        self.t0, self.fractions = time.monotonic(), dict[str, float]()
        self.boot_s: dict[tuple[str, str], float] = {}  # the last boot this run measured, by engine and model
        results = self.plan.experiment.results
        if left := await stop_left_servers(results.server_files(), self.target, results.word, results.base):
            await say(self.progress, 0.0, f"stopped the {left} server(s) a killed run left behind")
        ran: dict[str, _R | None] = {}
        slots, stop, judged = anyio.Semaphore(self.plan.parallel), Stop(), anyio.Event()

        async def in_slot(unit: Unit) -> None:
            nonlocal judged
            try:
                ran[unit.name] = await self.measure(unit, len(ran))
            finally:
                slots.release()
                judged.set()
                judged = anyio.Event()

        try:
            async with anyio.create_task_group() as tg:  # cancelled: each unit stops its own server
                while True:
                    await slots.acquire()
                    found = self.plan.next(ran)
                    if found is None:  # nothing to start until a running unit is judged
                        slots.release()
                        await judged.wait()
                        continue
                    if isinstance(found, Stop):
                        stop = found
                        break  # those running finish and are judged
                    ran[found.name] = None
                    tg.start_soon(in_slot, found)
        except BaseExceptionGroup as group:  # a unit's error ends the run, raised as it was one unit at a time
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        made = [r for r in ran.values() if r is not None]
        return self.judge.outcome(made, stop, time.monotonic() - self.t0)

    def _progress(self, unit: Unit, k: int) -> Progress:
        n, word = max(self.plan.todo(), k), self.plan.experiment.results.word

        async def report(fraction: float, text: str) -> None:
            self.fractions[unit.name] = fraction
            overall = sum(self.fractions.values()) / n
            await say(self.progress, overall, f"{word} {k} of {n} ({unit.name}): {text}")

        return report

    async def measure(self, unit: Unit, k: int) -> _R:
        """Boot the unit, measure it, stop it, judge it, write its record last; the server is stopped whatever
        happens."""
        started, t0 = datetime.now(UTC), time.monotonic()
        plan, progress = self.plan, self._progress(unit, k)
        experiment = plan.experiment
        results = experiment.results

        def write(name: str, text: str) -> None:
            results.write_unit_file(unit.name, name, text)

        keep = Keep(results.server_file(unit.name), unit.index, write, base=results.base)
        boot_unit(f"{results.word}-{unit.name}")  # a target that names its jobs (slurm) says which unit each is
        session = ServeSession(self.target, get_engine(unit.engine), progress, self.widening.get(unit.engine))
        key = (unit.engine, unit.serve.model)  # its progress moves against the last boot of this setup
        session.expected_boot_s = self.boot_s.get(key) or last_boot_s(results, session.engine)
        host = await self.target.host_info()  # the node, per unit: a unit on another node must show
        measured = await measured_boot(
            session,
            unit.serve,
            plan.benches(unit),
            keep=keep,
            boot_deadline_s=experiment.spec.boot_deadline_s,
            bench_deadline_s=experiment.spec.bench_deadline_s,
            exclusive=plan.parallel == 1,  # units at once share the target, each server with its own resources
            then=plan.then(unit, session, write),
        )
        write("boot.log", measured.log_text)
        if measured.boot.ready:
            self.boot_s[key] = measured.boot.boot_s
        record = self.judge.record(unit, measured, host, started, time.monotonic() - t0)
        results.write_record(unit.name, record)  # last: its presence means the unit is done
        record_written(experiment.workspace, results.record_file(unit.name), record, measured.log_text)
        await progress(1.0, self.judge.said(record))
        return record


__all__ = ["Experiment", "Judge", "Opener", "Plan", "Stop", "Unit", "Write", "preview", "run", "runner_lock", "start"]
