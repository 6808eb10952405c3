"""The Runner: one run of a campaign on its target, each cell booted once, benched, stopped and judged.

tools/campaign_runner.py checks and prepares the run, then hands it here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio

from redline.errors import InputError
from redline.ledger.campaign_file import server_file, write_cell_file, write_verdict
from redline.ledger.server_record import ServerRecord, clear_server, load_server, save_server
from redline.models import BenchResult, BenchWorkload
from redline.models.campaign import Campaign, CampaignPlan, CellPlan
from redline.models.campaign_results import (
    BootRecord,
    CampaignRunResult,
    CellOutcome,
    CellVerdict,
    Commands,
    ConcurrencyResult,
    Context,
    Trial,
)
from redline.models.ladder import GpuProfile
from redline.policy import campaign as plans
from redline.policy import champion as champions
from redline.targets import HostInfo, ServerHandle, Target
from redline.tools.campaign import Loaded
from redline.tools.session import BenchRun, Boot, Progress, ServeSession, say


async def stop_left_server(results: Path, target: Target) -> bool:
    """Stop the server a killed runner left recorded, if any; True when there was one."""
    record = load_server(server_file(results))
    if record is None:
        return False
    if record.handle.target != target.name:
        raise InputError(
            f"a cell's server is recorded on target {record.handle.target!r}, not {target.name!r}: run "
            f"the campaign on {record.handle.target!r} so it can be stopped first"
        )
    with anyio.CancelScope(shield=True):
        await target.stop(record.handle)
        clear_server(server_file(results))
    return True


def skipped(plan: CampaignPlan) -> list[str]:
    return [c.name for c in plan.cells if c.done is not None]


@dataclass
class Runner:
    """One run of a campaign: the cells in order, each booted once on the one target."""

    loaded: Loaded
    plan: CampaignPlan
    target: Target
    session: ServeSession
    progress: Progress | None
    host: HostInfo | None = None
    t0: float = field(default_factory=time.monotonic)

    @property
    def campaign(self) -> Campaign:
        return self.loaded.campaign

    async def run(self) -> CampaignRunResult:
        if await stop_left_server(self.loaded.results, self.target):
            await say(self.progress, 0.0, "stopped the server a killed run left behind")
        await self.session.check_model_path(self.loaded.base.model, "fix model: (or base.from_ladder) in the campaign")
        self.host = await self.target.host_info()
        ran: list[CellOutcome] = []
        todo = [c for c in self.plan.cells if c.done is None]
        stopped = None
        for k, cell in enumerate(todo):
            verdict = await self.run_cell(cell, k, len(todo))
            ran.append(
                CellOutcome(
                    cell=cell.name,
                    verdict=verdict.verdict,
                    reason=verdict.reason,
                    boot_s=verdict.boot.boot_s,
                    wall_s=verdict.wall_s,
                )
            )
            if verdict.verdict == "red" and not self.campaign.continue_on_red:
                stopped = cell.name
                break
        return self._result(ran, stopped)

    def _result(self, ran: list[CellOutcome], stopped: str | None) -> CampaignRunResult:
        name = self.campaign.name
        if stopped is not None:
            reason = (
                f"cell {stopped!r} is red ({ran[-1].reason}); the campaign stopped there (continue_on_red is false)"
            )
            hint = (
                f"read cells/{stopped}/verdict.yml; delete that folder to run the cell again, or set "
                "continue_on_red: true to go on past it"
            )
        else:
            reds = [o.cell for o in ran if o.verdict == "red"]
            reason = f"ran {len(ran)} cells" + (f"; red: {', '.join(reds)}" if reds else ", all green")
            hint = "call champion_select for the champion, campaign_report for the report and plots"
        return CampaignRunResult(
            campaign=name,
            dry_run=False,
            ran=ran,
            skipped=skipped(self.plan),
            boots=len(ran),
            stopped_early=stopped is not None,
            reason=reason,
            next=hint,
        )

    # ---- one cell ----------------------------------------------------------------------------------------

    def _cell_progress(self, cell: CellPlan, k: int, n: int) -> Progress:
        async def report(fraction: float, text: str) -> None:
            await say(
                self.progress,
                (k + fraction) / n,
                f"cell {k + 1} of {n} ({cell.name}), {time.monotonic() - self.t0:.0f}s elapsed: {text}",
            )

        return report

    async def run_cell(self, cell: CellPlan, k: int, n: int) -> CellVerdict:
        """Boot the cell, measure it, stop it, judge it; the server is stopped whatever happens."""
        started, t0 = datetime.now(UTC), time.monotonic()
        progress = self._cell_progress(cell, k, n)
        self.session.progress = progress
        started_servers: list[ServerHandle] = []

        async def record(handle: ServerHandle, log_bytes: int = 0) -> None:
            started_servers[:] = [handle]
            save_server(
                server_file(self.loaded.results),
                ServerRecord(
                    rung_index=cell.index,
                    engine=self.plan.engine,
                    handle=handle,
                    config=cell.serve,
                    boot_log_bytes=log_bytes,
                ),
            )

        await progress(0.0, "booting")
        try:
            boot = await self.session.boot(cell.serve, self.campaign.boot_deadline_s, on_start=record)
            measured = Measured()
            if boot.ready:
                await record(boot.handle, len(boot.log_text.encode()))
                measured = await self.measure(cell, boot, progress)
            log_text = await self._final_log(boot)
        finally:
            with anyio.CancelScope(shield=True):  # cancelled or failed: no server is left running
                for handle in started_servers:
                    await self.target.stop(handle)
                clear_server(server_file(self.loaded.results))
        verdict = self._verdict(cell, boot, measured, log_text, started, time.monotonic() - t0)
        write_verdict(self.loaded.results, verdict)  # last: its presence means the cell is done
        await progress(1.0, f"{verdict.verdict}: {verdict.reason}")
        return verdict

    async def _final_log(self, boot: Boot) -> str:
        """The server's whole log: boot, warm-up and benches."""
        if not boot.ready:
            return boot.log_text
        return await self.target.read_text(boot.handle.log_path)

    async def measure(self, cell: CellPlan, boot: Boot, progress: Progress) -> Measured:
        measured = Measured()
        warm = plans.warmup_workload(self.campaign)
        if warm is not None:
            await progress(0.3, f"warming up with {warm.num_prompts} requests")
            run = await self._bench(boot, cell, warm, "warmup.json")
            measured.warmup_command = run.argv
            measured.warmup_error = _bench_problem(run, self._figures(run)[0])
            if measured.warmup_error is not None:
                return measured
        order = plans.bench_order(self.campaign)
        for step, (c, t) in enumerate(order):
            await progress(0.3 + 0.7 * step / len(order), f"concurrency {c}, trial {t} of {self.campaign.trials}")
            trial, argv = await self._trial(boot, cell, c, t, step, warm is not None or step > 0)
            measured.trials.setdefault(c, []).append(trial)
            measured.bench_commands.append(argv)
            if not (trial.server_healthy_after and trial.figures is not None):
                break  # a dead or broken server: the later benches cannot be measured
        measured.results = [self._result_at(cell, c, measured.trials.get(c, [])) for c in self.campaign.concurrencies]
        return measured

    async def _bench(self, boot: Boot, cell: CellPlan, workload: BenchWorkload, name: str) -> BenchRun:
        offset = len((await self.target.read_text(boot.handle.log_path)).encode())
        run = await self.session.bench(
            boot.handle, cell.serve, workload, name, deadline_s=self.campaign.bench_deadline_s, log_offset=offset
        )
        if run.result_text is not None:
            write_cell_file(self.loaded.results, cell.name, name, run.result_text)
        return run

    def _figures(self, run: BenchRun) -> tuple[BenchResult | None, str | None]:
        if run.result_text is None:
            return None, None
        try:
            return self.session.engine.parse_bench_result(run.result_text), None
        except InputError as exc:
            return None, str(exc)

    async def _trial(
        self,
        boot: Boot,
        cell: CellPlan,
        c: int,
        t: int,
        step: int,
        warm: bool,
    ) -> tuple[Trial, list[str]]:
        name = plans.bench_file(c, t, self.campaign.trials)
        run = await self._bench(boot, cell, plans.bench_workload(self.campaign, c, step), name)
        figures, unreadable = self._figures(run)
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

    def _result_at(self, cell: CellPlan, c: int, trials: list[Trial]) -> ConcurrencyResult:
        n = plans.prompts_at(self.campaign, c)[0]
        if not trials:
            return ConcurrencyResult(
                concurrency=c,
                num_prompts=n,
                ok=False,
                sla_ok=False,
                reason="not run: an earlier bench left the server unable to answer",
            )
        per_trial = [champions.metrics_of(t.figures, cell.serve) for t in trials if t.figures is not None]
        metrics = champions.summarize(per_trial) if per_trial else {}
        sla = champions.sla_checks(metrics, self.campaign.sla)
        problems = [p for t in trials if (p := _trial_problem(t)) is not None]
        return ConcurrencyResult(
            concurrency=c,
            num_prompts=n,
            ok=not problems,
            reason=problems[0] if problems else None,
            metrics=metrics,
            sla=sla,
            sla_ok=all(s.ok for s in sla),
            trials=trials,
        )

    # ---- the verdict -------------------------------------------------------------------------------------

    def _verdict(
        self, cell: CellPlan, boot: Boot, measured: Measured, log_text: str, started: datetime, wall_s: float
    ) -> CellVerdict:
        results = self.loaded.results
        log_file = write_cell_file(results, cell.name, "boot.log", log_text)
        verdict, reason = champions.judge(
            self.campaign,
            boot_ok=boot.ready,
            boot_reason=_boot_reason(boot),
            warmup_error=measured.warmup_error,
            results=measured.results,
        )
        signals = boot.signals
        return CellVerdict(
            campaign=self.campaign.name,
            cell=cell.name,
            index=cell.index,
            baseline=cell.baseline,
            levers=cell.levers,
            verdict=verdict,
            reason=reason,
            gates=cell.gates,
            widened=list(boot.widened),
            boot=BootRecord(
                status=signals.status,
                reason=signals.reason,
                boot_s=round(boot.boot_s, 2),
                log_file=log_file,
                signals=signals,
            ),
            results=measured.results,
            commands=Commands(boot=cell.boot_command, warmup=measured.warmup_command, bench=measured.bench_commands),
            context=self._context(cell, signals.engine_version),
            started_at=started,
            ended_at=datetime.now(UTC),
            wall_s=round(wall_s, 2),
        )

    def _context(self, cell: CellPlan, engine_version: str | None) -> Context:
        host = self.host
        gpu = None
        if host is not None and host.gpus:
            first = host.gpus[0]
            gpu = GpuProfile(
                name=first.name, memory_gib=round(first.memory_mib / 1024, 1), count=champions.gpus_of(cell.serve)
            )
        return Context(
            model=cell.serve.model,
            gpu=gpu,
            host=host.hostname if host else None,
            node=host.machine_id if host else None,
            engine=self.plan.engine,
            engine_version=engine_version,
            serve=cell.serve,
            workload=self.campaign.workload,
            regime=cell.regime,
            bench_backend=self.plan.bench_backend,
            bench_client=self.plan.engine,
            trials=self.campaign.trials,
            warmup_requests=self.campaign.warmup_requests,
            simulated=False,
        )


@dataclass
class Measured:
    """What the benches of one cell gave."""

    warmup_command: list[str] | None = None
    warmup_error: str | None = None
    trials: dict[int, list[Trial]] = field(default_factory=dict)
    results: list[ConcurrencyResult] = field(default_factory=list)
    bench_commands: list[list[str]] = field(default_factory=list)


def _boot_reason(boot: Boot) -> str:
    return f"{boot.signals.status.value}: {boot.signals.reason}"


def _bench_problem(run: BenchRun, figures: BenchResult | None) -> str | None:
    """Why a bench did not measure what it asked, or None."""
    if figures is None:
        why = run.log_lines[-1] if run.log_lines else f"the bench exited {run.run.returncode}"
        return f"no result file ({why})"
    if not figures.all_completed:
        return f"{figures.failed} of {figures.num_prompts} requests failed (completed {figures.completed})"
    if not run.healthy_after:
        return "the server did not answer its health check after the bench"
    return None


def _trial_problem(trial: Trial) -> str | None:
    if trial.figures is None:
        why = trial.log_lines[-1] if trial.log_lines else f"the bench exited {trial.exit_code}"
        return f"trial {trial.trial}: no result ({why})"
    if not trial.figures.all_completed:
        f = trial.figures
        return f"trial {trial.trial}: {f.failed} of {f.num_prompts} requests failed (completed {f.completed})"
    if not trial.server_healthy_after:
        return f"trial {trial.trial}: the server did not answer its health check after the bench"
    return None


__all__ = ["Measured", "Runner", "skipped", "stop_left_server"]
