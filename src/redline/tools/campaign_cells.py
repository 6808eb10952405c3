"""The Runner: one run of a campaign on its target, each cell booted once, benched, stopped and judged.

Up to the campaign's `parallel` cells run at once, each by a session of its own on a server of its own
(a target that runs that many servers at once: see Target.max_servers); one at a time, they run in
order. tools/campaign_runner.py checks and prepares the run, then hands it here; the verdict is
made in tools/campaign_verdict.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.campaign_file import server_file, server_files, write_cell_file, write_verdict
from redline.ledger.derived import derived_dir
from redline.ledger.server_record import ServerRecord, clear_server, load_server, save_server
from redline.models import BenchResult, BenchWorkload, Widenings
from redline.models.campaign import Campaign, CampaignPlan, CellPlan
from redline.models.campaign_results import CampaignRunResult, CellOutcome, CellVerdict, Trial
from redline.policy import campaign as plans
from redline.policy import champion as champions
from redline.targets import ServerHandle, Target
from redline.tools.campaign_load import Loaded
from redline.tools.campaign_verdict import Judge, Measured
from redline.tools.session import BenchRun, Boot, Progress, ServeSession, bench_problem, say


async def stop_left_servers(results: Path, target: Target) -> int:
    """Stop every server a killed runner left recorded (one per cell it was in); how many there were."""
    left = [(path, record) for path in server_files(results) if (record := load_server(path)) is not None]
    for _, record in left:
        if record.handle.target != target.name:
            raise InputError(
                f"a cell's server is recorded on target {record.handle.target!r}, not {target.name!r}: run "
                f"the campaign on {record.handle.target!r} so it can be stopped first"
            )
    with anyio.CancelScope(shield=True):
        for path, record in left:
            await target.stop(record.handle)
            clear_server(path)
    return len(left)


def skipped(plan: CampaignPlan) -> list[str]:
    return [c.name for c in plan.cells if c.done is not None]


@dataclass
class Runner:
    """One run of a campaign: its cells in order, up to `parallel` at once, each booted once by its own engine."""

    loaded: Loaded
    plan: CampaignPlan
    target: Target
    progress: Progress | None
    widening: Widenings | None = None
    versions: Mapping[str, str | None] = field(default_factory=dict)  # each engine's version there, where asked
    t0: float = field(default_factory=time.monotonic)
    judge: Judge = field(init=False)
    fractions: dict[str, float] = field(default_factory=dict)  # how far each cell is: the run is their mean

    @property
    def campaign(self) -> Campaign:
        return self.loaded.campaign

    async def run(self) -> CampaignRunResult:
        if left := await stop_left_servers(self.loaded.results, self.target):
            await say(self.progress, 0.0, f"stopped the {left} server(s) a killed run left behind")
        first = self._session(self.plan.cells[0], None)
        await first.check_model_path(self.loaded.base.model, "fix model: (or base.from_ladder) in the campaign")
        self.judge = Judge(self.campaign, self.plan, await self.target.host_info(), self.versions)
        todo = [c for c in self.plan.cells if c.done is None]
        derived_dir(self.loaded.results, "cells", create=True)  # each running cell's server record goes in it
        verdicts: dict[str, CellVerdict] = {}
        slots = anyio.Semaphore(self.campaign.parallel)

        async def run_in_slot(cell: CellPlan, k: int) -> None:
            try:
                verdicts[cell.name] = await self.run_cell(cell, k, len(todo))
            finally:
                slots.release()

        try:
            async with anyio.create_task_group() as tg:  # cancelled: each cell stops its own server
                for k, cell in enumerate(todo):
                    await slots.acquire()
                    if _reds(verdicts.values()) and not self.campaign.continue_on_red:
                        break  # a red cell stops further cells from starting; those running finish and are judged
                    tg.start_soon(run_in_slot, cell, k)
        except BaseExceptionGroup as group:  # a cell's error ends the run, raised as it was one cell at a time
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        return self._result([verdicts[c.name] for c in todo if c.name in verdicts], time.monotonic() - self.t0)

    def _result(self, verdicts: list[CellVerdict], wall_s: float) -> CampaignRunResult:
        ran = [
            CellOutcome(cell=v.cell, verdict=v.verdict, reason=v.reason, boot_s=v.boot.boot_s, wall_s=v.wall_s)
            for v in verdicts
        ]
        gpu_s = sum(v.wall_s * champions.gpus_of(v.context.serve) for v in verdicts)
        at_once = f", up to {self.campaign.parallel} cells at once" if self.campaign.parallel > 1 else ""
        took = f"{wall_s:.0f}s of wall time{at_once}, {gpu_s:.0f} GPU-seconds"
        reds = _reds(verdicts)
        stopped = reds[0] if reds and not self.campaign.continue_on_red else None
        if stopped is not None:
            reason = (
                f"cell {stopped.cell!r} is red ({stopped.reason}); the campaign stopped there (continue_on_red is "
                f"false); {len(ran)} cells ran in {took}"
            )
            hint = (
                f"read cells/{stopped.cell}/verdict.yml; delete that folder to run the cell again, or set "
                "continue_on_red: true to go on past it"
            )
        else:
            red = f"; red: {', '.join(v.cell for v in reds)}" if reds else ", all green"
            reason = f"ran {len(ran)} cells{red}; {took}"
            hint = "call champion_select for the champion, campaign_report for the report and plots"
        return CampaignRunResult(
            campaign=self.campaign.name,
            dry_run=False,
            ran=ran,
            skipped=skipped(self.plan),
            boots=len(ran),
            stopped_early=stopped is not None,
            wall_s=round(wall_s, 2),
            gpu_s=round(gpu_s, 2),
            reason=reason,
            next=hint,
        )

    # ---- one cell ----------------------------------------------------------------------------------------

    def _session(self, cell: CellPlan, progress: Progress | None) -> ServeSession:
        """A session of the cell's own: cells that run at once share nothing but the target."""
        return ServeSession(self.target, get_engine(cell.engine), progress, (self.widening or {}).get(cell.engine))

    def _cell_progress(self, cell: CellPlan, k: int, n: int) -> Progress:
        async def report(fraction: float, text: str) -> None:
            self.fractions[cell.name] = fraction
            await say(
                self.progress,
                sum(self.fractions.values()) / n,
                f"cell {k + 1} of {n} ({cell.name}), {time.monotonic() - self.t0:.0f}s elapsed: {text}",
            )

        return report

    async def run_cell(self, cell: CellPlan, k: int, n: int) -> CellVerdict:
        """Boot the cell, measure it, stop it, judge it; the server is stopped whatever happens."""
        started, t0 = datetime.now(UTC), time.monotonic()
        progress = self._cell_progress(cell, k, n)
        session = self._session(cell, progress)
        record_file = server_file(self.loaded.results, cell.name)
        started_servers: list[ServerHandle] = []

        async def record(handle: ServerHandle, log_bytes: int = 0) -> None:
            started_servers[:] = [handle]
            record = ServerRecord(
                rung_index=cell.index, engine=cell.engine, handle=handle, config=cell.serve, boot_log_bytes=log_bytes
            )
            save_server(record_file, record)

        await progress(0.0, "booting")
        try:
            # one cell at a time holds the target alone; cells at once share it, each server with its own resources
            alone = self.campaign.parallel == 1
            boot = await session.boot(cell.serve, self.campaign.boot_deadline_s, on_start=record, exclusive=alone)
            measured = Measured()
            if boot.ready:
                await record(boot.handle, len(boot.log_text.encode()))
                measured = await self.measure(session, cell, boot, progress)
            log_text = await self._final_log(boot)
        finally:
            with anyio.CancelScope(shield=True):  # cancelled or failed: no server is left running
                for handle in started_servers:
                    await self.target.stop(handle)
                clear_server(record_file)
        wall_s = time.monotonic() - t0
        log_file = write_cell_file(self.loaded.results, cell.name, "boot.log", log_text)
        verdict = self.judge.verdict(cell, boot, measured, log_file, started, wall_s)
        write_verdict(self.loaded.results, verdict)  # last: its presence means the cell is done
        await progress(1.0, f"{verdict.verdict}: {verdict.reason}")
        return verdict

    async def _final_log(self, boot: Boot) -> str:
        """The server's whole log: boot, warm-up and benches."""
        if not boot.ready:
            return boot.log_text
        return await self.target.read_text(boot.handle.log_path)

    async def measure(self, session: ServeSession, cell: CellPlan, boot: Boot, progress: Progress) -> Measured:
        measured = Measured()
        warm = plans.warmup_workload(self.campaign)
        if warm is not None:
            await progress(0.3, f"warming up with {warm.num_prompts} requests")
            run = await self._bench(session, boot, cell, warm, "warmup.json")
            measured.warmup_command = run.argv
            measured.warmup_error = bench_problem(run, _figures(session, run)[0])
            if measured.warmup_error is not None:
                return measured
        order = plans.bench_order(self.campaign)
        for step, (c, t) in enumerate(order):
            await progress(0.3 + 0.7 * step / len(order), f"concurrency {c}, trial {t} of {self.campaign.trials}")
            trial, argv = await self._trial(session, boot, cell, c, t, step, warm is not None or step > 0)
            measured.trials.setdefault(c, []).append(trial)
            measured.bench_commands.append(argv)
            if not (trial.server_healthy_after and trial.figures is not None):
                break  # a dead or broken server: the later benches cannot be measured
        trials = measured.trials
        measured.results = [self.judge.result_at(cell, c, trials.get(c, [])) for c in self.campaign.concurrencies]
        return measured

    async def _bench(
        self, session: ServeSession, boot: Boot, cell: CellPlan, workload: BenchWorkload, name: str
    ) -> BenchRun:
        offset = len((await self.target.read_text(boot.handle.log_path)).encode())
        run = await session.bench(
            boot.handle, cell.serve, workload, name, deadline_s=self.campaign.bench_deadline_s, log_offset=offset
        )
        if run.result_text is not None:
            write_cell_file(self.loaded.results, cell.name, name, run.result_text)
        return run

    async def _trial(
        self,
        session: ServeSession,
        boot: Boot,
        cell: CellPlan,
        c: int,
        t: int,
        step: int,
        warm: bool,
    ) -> tuple[Trial, list[str]]:
        name = plans.bench_file(c, t, self.campaign.trials)
        run = await self._bench(session, boot, cell, plans.bench_workload(self.campaign, c, step), name)
        figures, unreadable = _figures(session, run)
        lines = [*run.log_lines, *([unreadable] if unreadable else [])]
        trial = Trial(
            trial=t,
            warm=warm,
            result_file=name if run.result_text is not None else None,
            figures=figures,
            server_healthy_after=run.healthy_after,
            exit_code=run.run.returncode,
            log_lines=lines[-50:],
        )
        return trial, run.argv


def _reds(verdicts: Iterable[CellVerdict]) -> list[CellVerdict]:
    return [v for v in verdicts if v.verdict == "red"]


def _figures(session: ServeSession, run: BenchRun) -> tuple[BenchResult | None, str | None]:
    """The bench's figures, or why its result file cannot be read."""
    if run.result_text is None:
        return None, None
    try:
        return session.engine.parse_bench_result(run.result_text), None
    except InputError as exc:
        return None, str(exc)


__all__ = ["Runner", "skipped", "stop_left_servers"]
