"""Campaign operations, as plain functions that the MCP tools and the CLI both call.

    plan = campaign_plan(path, target=target)                           # every command; starts nothing
    result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    campaign_status(path); campaign_aggregate(path); champion_select(path, ChampionSelectRequest(top=3))

A run boots each cell once (one clean boot, through ServeSession), warms it up,
benches it at every concurrency on that one server, stops it and writes the
cell's verdict. The running cell's server is recorded in `<results>/server.json`
as soon as it starts, so a runner killed at any point leaves a record the next
run (or a person) stops it by. A cell with a verdict is done: a re-run resumes
after it. Each returns a pydantic model; each refusal is a RedlineError saying
what to fix.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import anyio
from filelock import FileLock, Timeout
from pydantic import Field

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.errors import InputError, RedlineError
from redline.ledger import read_ladder
from redline.ledger.campaign_file import (
    read_campaign, read_verdict, read_verdicts, results_dir, server_file, lock_file, write_campaign, write_cell_file,
    write_verdict,
)
from redline.ledger.server_record import ServerRecord, clear_server, load_server, save_server
from redline.models import BenchResult, BenchWorkload, ServeConfig, Widening
from redline.models.campaign import (
    BootRecord, Campaign, CampaignPlan, CampaignRunResult, CampaignStatus, CampaignTable, CellOutcome, CellPlan,
    CellSpec, CellState, CellVerdict, ChampionReport, Commands, ConcurrencyResult, Context, Trial,
)
from redline.models.ladder import GpuProfile
from redline.policy import campaign as policy
from redline.targets import HostInfo, ServerHandle, Target
from redline.tools.requests import Request
from redline.tools.session import BenchRun, Boot, Progress, ServeSession, say

ACK_FLAG = "i_understand_this_submits_jobs"


# ---- requests: what the MCP tools and the CLI take (the campaign file itself is named beside them) ---------


class CampaignInitRequest(Request):
    """A new campaign file, written from a campaign's fields (comments can be added by hand later)."""

    spec: Annotated[Campaign, Field(description="The campaign: name, target, model, base, workload, "
                                                "concurrencies, grid and/or cells, focus, sla, ...")]


class CampaignPlanRequest(Request):
    """Every boot and bench command a run would do, in order, after the methodology gates. Starts nothing."""

    target: Annotated[str, Field(max_length=128, description="Whose engine command to show; empty: the campaign's target")] = ""


class CampaignRunRequest(Request):
    """Run the campaign: boot each cell once, bench it at every concurrency, write its verdict."""

    target: Annotated[str, Field(max_length=128, description="Must be the campaign's target; empty: the campaign's")] = ""
    i_understand_this_submits_jobs: Annotated[bool, Field(description=(
        "true to boot servers and bench them on the target; without it nothing starts"))] = False
    dry_run: Annotated[bool, Field(description="List every boot and bench command and start nothing")] = False


class CampaignStatusRequest(Request):
    """Which cells are done (green or red), running or pending, and what to do next."""


class CampaignAggregateRequest(Request):
    """One table of cells x concurrencies with the focus metric and the guards."""


class ChampionSelectRequest(Request):
    """The champion under the SLA, or "no improvement"; always a DRAFT."""

    top: Annotated[int, Field(ge=1, le=50, description="How many of the best cells to list")] = 3


# Every campaign operation, by its MCP tool name, and the request it takes (campaign_report's is in tools/report.py).
OPERATIONS: dict[str, type[Request]] = {
    "campaign_init": CampaignInitRequest,
    "campaign_plan": CampaignPlanRequest,
    "campaign_run": CampaignRunRequest,
    "campaign_status": CampaignStatusRequest,
    "campaign_aggregate": CampaignAggregateRequest,
    "champion_select": ChampionSelectRequest,
}


# ---- loading -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """A campaign file read and resolved: its cells, its baseline, its base serve config."""

    path: Path
    campaign: Campaign
    results: Path
    cells: list[CellSpec]
    baseline: str
    base: ServeConfig

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cells]


def load(path: str | Path) -> Loaded:
    """Read the campaign and its base (a ladder's ceiling when base.from_ladder names one, relative to the file)."""
    path = Path(path)
    campaign = read_campaign(path)
    ladder = None
    if campaign.base.from_ladder is not None:
        where = path.parent / Path(campaign.base.from_ladder).expanduser()
        try:
            ladder = read_ladder(where)
        except RedlineError as exc:
            raise InputError(f"base.from_ladder: {exc}") from exc
    cells = policy.expand_cells(campaign)
    return Loaded(path, campaign, results_dir(path, campaign), cells, policy.baseline_of(campaign, cells),
                  policy.base_config(campaign, ladder))


def campaign_target(path: str | Path, requested: str = "") -> str:
    """The target a call runs on: the one asked for, else the campaign's (the wiring opens it by this name)."""
    return requested or read_campaign(Path(path)).target


def campaign_init(path: str | Path, request: CampaignInitRequest) -> Campaign:
    """Write a new campaign file at path (refused if one is there) after checking it plans cleanly."""
    path = Path(path)
    if path.exists():
        raise InputError(f"{path}: a campaign is already there; run it, or give another file name")
    write_campaign(path, request.spec)
    try:
        load(path)  # a campaign that cannot plan is not left behind
    except RedlineError:
        path.unlink(missing_ok=True)
        raise
    return request.spec


# ---- the plan -----------------------------------------------------------------------------------------------


def _executable(engine: Engine, target: Target | None) -> list[str] | None:
    return target.engine_command(engine.name, list(engine.default_command)) if target is not None else None


def _admit(engine: Engine, plan: CampaignPlan, widening: Widening | None) -> CampaignPlan:
    """Each cell's flags and env against the engine's allowlist: refused now, not at its boot."""
    cells = []
    for cell in plan.cells:
        try:
            cells.append(cell.model_copy(update={"widened": engine.admit(cell.serve, widening)}))
        except InputError as exc:
            raise InputError(f"cell {cell.name!r}: {exc}") from exc
    return plan.model_copy(update={"cells": cells})


def _plan(loaded: Loaded, target: Target | None, widening: Widening | None) -> CampaignPlan:
    engine = get_engine(loaded.campaign.engine)
    done = {name: v.verdict for name, v in read_verdicts(loaded.results, loaded.names).items()}
    plan = policy.plan_campaign(loaded.campaign, loaded.base, engine, _executable(engine, target),
                                path=str(loaded.path), done=done)
    return _admit(engine, plan, widening)


def campaign_plan(path: str | Path, request: CampaignPlanRequest | None = None, *, target: Target | None = None,
                  widening: Widening | None = None) -> CampaignPlan:
    """Every boot command and bench command per cell, in run order, with the gates' changes. Starts nothing.

    `target` (opened by the caller from request.target or the campaign's) only supplies its engine command.
    """
    return _plan(load(path), target, widening)


# ---- the run ------------------------------------------------------------------------------------------------


def require_ack(i_understand_this_submits_jobs: bool, dry_run: bool = False) -> None:
    """Fail closed: a run that boots servers needs the acknowledgement; a dry run does not."""
    if not dry_run and i_understand_this_submits_jobs is not True:
        raise InputError(f"campaign_run boots servers and benches them on the target: pass {ACK_FLAG}=true to start "
                         "it, or dry_run=true to see every command first")


def _check_resumable(loaded: Loaded, plan: CampaignPlan) -> None:
    """A finished cell is skipped only if it ran the config planned now; a red one stops a fail-fast campaign."""
    for cell in plan.cells:
        if cell.done is None:
            continue
        verdict = read_verdict(loaded.results, cell.name)
        assert verdict is not None
        if verdict.context.serve != cell.serve:
            raise InputError(f"cell {cell.name!r} has a verdict made with another serve config than the campaign "
                             f"plans now: delete {verdict_dir(loaded, cell.name)} to run it again, or restore the file")
        if verdict.verdict == "red" and not loaded.campaign.continue_on_red:
            raise InputError(f"cell {cell.name!r} is red ({verdict.reason}): delete {verdict_dir(loaded, cell.name)} "
                             "to run it again, or set continue_on_red: true to go on past it")


def verdict_dir(loaded: Loaded, cell: str) -> Path:
    return loaded.results / "cells" / cell


@asynccontextmanager
async def _runner_lock(results: Path) -> AsyncIterator[None]:
    """One runner per campaign; the OS drops the lock of a runner that is killed."""
    results.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_file(results)), timeout=0)
    try:
        lock.acquire()
    except Timeout as exc:
        raise InputError(f"another campaign_run is running this campaign ({lock_file(results)} is held): wait for it "
                         "(campaign_status) or cancel its job") from exc
    try:
        yield
    finally:
        lock.release()


async def stop_left_server(results: Path, target: Target) -> bool:
    """Stop the server a killed runner left recorded, if any; True when there was one."""
    record = load_server(server_file(results))
    if record is None:
        return False
    if record.handle.target != target.name:
        raise InputError(f"a cell's server is recorded on target {record.handle.target!r}, not {target.name!r}: run "
                         f"the campaign on {record.handle.target!r} so it can be stopped first")
    with anyio.CancelScope(shield=True):
        await target.stop(record.handle)
        clear_server(server_file(results))
    return True


async def campaign_run(
    path: str | Path, target: Target, *, i_understand_this_submits_jobs: bool, dry_run: bool = False,
    progress: Progress | None = None, widening: Widening | None = None,
) -> CampaignRunResult:
    """Run the campaign on target: each cell without a verdict is booted once, benched, stopped and judged.

    Fails closed without the acknowledgement; a dry run returns the plan and starts nothing.
    A red cell stops the run unless the campaign says continue_on_red.
    """
    if dry_run:
        plan = campaign_plan(path, target=target, widening=widening)
        return CampaignRunResult(campaign=plan.campaign, dry_run=True, plan=plan, skipped=_skipped(plan),
                                 reason=f"dry run: {plan.boots} boots and {plan.benches} benches would run; none started",
                                 next=f"call campaign_run with {ACK_FLAG}=true to run them")
    require_ack(i_understand_this_submits_jobs)
    loaded = load(path)
    if target.name != loaded.campaign.target:
        raise InputError(f"the campaign runs on target {loaded.campaign.target!r}, not {target.name!r}: run it there, "
                         "or change target: in the campaign file")
    plan = _plan(loaded, target, widening)
    _check_resumable(loaded, plan)
    async with _runner_lock(loaded.results):
        runner = Runner(loaded, plan, target, ServeSession(target, get_engine(plan.engine), None, widening), progress)
        return await runner.run()


def _skipped(plan: CampaignPlan) -> list[str]:
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
            ran.append(CellOutcome(cell=cell.name, verdict=verdict.verdict, reason=verdict.reason,
                                   boot_s=verdict.boot.boot_s, wall_s=verdict.wall_s))
            if verdict.verdict == "red" and not self.campaign.continue_on_red:
                stopped = cell.name
                break
        return self._result(ran, stopped)

    def _result(self, ran: list[CellOutcome], stopped: str | None) -> CampaignRunResult:
        name = self.campaign.name
        if stopped is not None:
            reason = f"cell {stopped!r} is red ({ran[-1].reason}); the campaign stopped there (continue_on_red is false)"
            hint = (f"read cells/{stopped}/verdict.yml; delete that folder to run the cell again, or set "
                    "continue_on_red: true to go on past it")
        else:
            reds = [o.cell for o in ran if o.verdict == "red"]
            reason = f"ran {len(ran)} cells" + (f"; red: {', '.join(reds)}" if reds else ", all green")
            hint = "call champion_select for the champion, campaign_report for the report and plots"
        return CampaignRunResult(campaign=name, dry_run=False, ran=ran, skipped=_skipped(self.plan), boots=len(ran),
                                 stopped_early=stopped is not None, reason=reason, next=hint)

    # ---- one cell ----------------------------------------------------------------------------------------

    def _cell_progress(self, cell: CellPlan, k: int, n: int) -> Progress:
        async def report(fraction: float, text: str) -> None:
            await say(self.progress, (k + fraction) / n,
                      f"cell {k + 1} of {n} ({cell.name}), {time.monotonic() - self.t0:.0f}s elapsed: {text}")
        return report

    async def run_cell(self, cell: CellPlan, k: int, n: int) -> CellVerdict:
        """Boot the cell, measure it, stop it, judge it; the server is stopped whatever happens."""
        started, t0 = datetime.now(UTC), time.monotonic()
        progress = self._cell_progress(cell, k, n)
        self.session.progress = progress
        started_servers: list[ServerHandle] = []

        async def record(handle: ServerHandle, log_bytes: int = 0) -> None:
            started_servers[:] = [handle]
            save_server(server_file(self.loaded.results), ServerRecord(
                rung_index=cell.index, engine=self.plan.engine, handle=handle, config=cell.serve,
                boot_log_bytes=log_bytes))

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
        warm = policy.warmup_workload(self.campaign)
        if warm is not None:
            await progress(0.3, f"warming up with {warm.num_prompts} requests")
            run = await self._bench(boot, cell, warm, "warmup.json")
            measured.warmup_command = run.argv
            measured.warmup_error = _bench_problem(run, self._figures(run)[0])
            if measured.warmup_error is not None:
                return measured
        order = policy.bench_order(self.campaign)
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
        run = await self.session.bench(boot.handle, cell.serve, workload, name,
                                       deadline_s=self.campaign.bench_deadline_s, log_offset=offset)
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

    async def _trial(self, boot: Boot, cell: CellPlan, c: int, t: int, step: int, warm: bool) -> tuple[Trial, list[str]]:
        name = policy.bench_file(c, t, self.campaign.trials)
        run = await self._bench(boot, cell, policy.bench_workload(self.campaign, c, step), name)
        figures, unreadable = self._figures(run)
        lines = [*run.log_lines, *([unreadable] if unreadable else [])]
        trial = Trial(trial=t, warm=warm, result_file=name if run.result_text is not None else None, figures=figures,
                      server_healthy_after=run.healthy_after, exit_code=run.run.returncode, log_lines=lines[-50:])
        return trial, run.argv

    def _result_at(self, cell: CellPlan, c: int, trials: list[Trial]) -> ConcurrencyResult:
        n = policy.prompts_at(self.campaign, c)[0]
        if not trials:
            return ConcurrencyResult(concurrency=c, num_prompts=n, ok=False, sla_ok=False,
                                     reason="not run: an earlier bench left the server unable to answer")
        per_trial = [policy.metrics_of(t.figures, cell.serve) for t in trials if t.figures is not None]
        metrics = policy.summarize(per_trial) if per_trial else {}
        sla = policy.sla_checks(metrics, self.campaign.sla)
        problems = [p for t in trials if (p := _trial_problem(t)) is not None]
        return ConcurrencyResult(concurrency=c, num_prompts=n, ok=not problems, reason=problems[0] if problems else None,
                                 metrics=metrics, sla=sla, sla_ok=all(s.ok for s in sla), trials=trials)

    # ---- the verdict -------------------------------------------------------------------------------------

    def _verdict(self, cell: CellPlan, boot: Boot, measured: Measured, log_text: str, started: datetime,
                 wall_s: float) -> CellVerdict:
        results = self.loaded.results
        log_file = write_cell_file(results, cell.name, "boot.log", log_text)
        verdict, reason = policy.judge(self.campaign, boot_ok=boot.ready, boot_reason=_boot_reason(boot),
                                       warmup_error=measured.warmup_error, results=measured.results)
        signals = boot.signals
        return CellVerdict(
            campaign=self.campaign.name, cell=cell.name, index=cell.index, baseline=cell.baseline, levers=cell.levers,
            verdict=verdict, reason=reason, gates=cell.gates, widened=list(boot.widened),
            boot=BootRecord(status=signals.status, reason=signals.reason, boot_s=round(boot.boot_s, 2),
                            log_file=log_file, signals=signals),
            results=measured.results,
            commands=Commands(boot=cell.boot_command, warmup=measured.warmup_command, bench=measured.bench_commands),
            context=self._context(cell, signals.engine_version),
            started_at=started, ended_at=datetime.now(UTC), wall_s=round(wall_s, 2),
        )

    def _context(self, cell: CellPlan, engine_version: str | None) -> Context:
        host = self.host
        gpu = None
        if host is not None and host.gpus:
            first = host.gpus[0]
            gpu = GpuProfile(name=first.name, memory_gib=round(first.memory_mib / 1024, 1),
                             count=policy.gpus_of(cell.serve))
        return Context(
            model=cell.serve.model, gpu=gpu, host=host.hostname if host else None,
            node=host.machine_id if host else None, engine=self.plan.engine, engine_version=engine_version,
            serve=cell.serve, workload=self.campaign.workload, regime=cell.regime,
            bench_backend=self.plan.bench_backend, bench_client=self.plan.engine, trials=self.campaign.trials,
            warmup_requests=self.campaign.warmup_requests, simulated=False,
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


# ---- reading results ----------------------------------------------------------------------------------------


def campaign_status(path: str | Path, request: CampaignStatusRequest | None = None) -> CampaignStatus:
    """Which cells are done (green or red), which one a runner is in, which are pending; what to do next."""
    loaded = load(path)
    verdicts = read_verdicts(loaded.results, loaded.names)
    record = load_server(server_file(loaded.results))
    running = next((c.name for i, c in enumerate(loaded.cells, 1) if record and record.rung_index == i), None)
    states = [_state(name, verdicts.get(name), name == running) for name in loaded.names]
    green = sum(s.state == "green" for s in states)
    red = sum(s.state == "red" for s in states)
    return CampaignStatus(campaign=loaded.campaign.name, path=str(loaded.path), results=str(loaded.results),
                          total=len(states), done=green + red, green=green, red=red, cells=states, running=running,
                          next=_next_hint(loaded, states, running))


def _state(name: str, verdict: CellVerdict | None, running: bool) -> CellState:
    if verdict is not None:
        return CellState(cell=name, state=verdict.verdict, reason=verdict.reason)
    return CellState(cell=name, state="running" if running else "pending")


def _next_hint(loaded: Loaded, states: Sequence[CellState], running: str | None) -> str:
    pending = [s.cell for s in states if s.state in ("pending", "running")]
    reds = [s.cell for s in states if s.state == "red"]
    if running is not None:
        return (f"cell {running!r} has a server recorded as running: wait for its job, or run the campaign again "
                "to stop that server and resume")
    if reds and pending and not loaded.campaign.continue_on_red:
        return f"cell {reds[0]!r} is red: read its verdict.yml; delete its folder to re-run it, or set continue_on_red"
    if pending:
        return f"{len(pending)} cells to run: campaign_run resumes at {pending[0]!r}"
    return "every cell has a verdict: call champion_select, then campaign_report"


def campaign_aggregate(path: str | Path, request: CampaignAggregateRequest | None = None) -> CampaignTable:
    """The table of cells x concurrencies: the focus metric (mean, std over trials) and the guards."""
    loaded = load(path)
    return policy.campaign_table(loaded.campaign, loaded.names, read_verdicts(loaded.results, loaded.names))


def champion_select(path: str | Path, request: ChampionSelectRequest | None = None) -> ChampionReport:
    """The champion under the SLA in the baseline's regime, or "no improvement" inside the noise band. DRAFT."""
    request = request or ChampionSelectRequest()
    loaded = load(path)
    verdicts = read_verdicts(loaded.results, loaded.names)
    return policy.select_champion(loaded.campaign, loaded.names, loaded.baseline, verdicts, top=request.top)


__all__ = [
    "ACK_FLAG", "OPERATIONS", "CampaignAggregateRequest", "CampaignInitRequest", "CampaignPlanRequest",
    "CampaignRunRequest", "CampaignStatusRequest", "ChampionSelectRequest", "Loaded", "campaign_aggregate",
    "campaign_init", "campaign_plan", "campaign_run", "campaign_status", "campaign_target", "champion_select", "load",
    "require_ack", "stop_left_server",
]
