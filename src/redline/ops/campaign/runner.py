"""The Runner: one run of a campaign on its target, each cell booted once, benched, stopped and judged.

Up to the campaign's `parallel` cells run at once, each by a session of its own on a server of its own
(a target that runs that many servers at once: see Target.max_servers); one at a time, they run in
order. ops/campaign/run.py checks and prepares the run, then hands it here; the verdict is
made in ops/campaign/verdict.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio

from redline.engines import get_engine
from redline.ledger.campaign_file import server_file, server_files, write_cell_file, write_verdict
from redline.ledger.derived import derived_dir
from redline.models import Widenings
from redline.models.campaign import Campaign
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import CampaignRunResult, CellOutcome, CellVerdict
from redline.ops.campaign.boundary import boundary_probes
from redline.ops.campaign.load import Loaded
from redline.ops.campaign.search import Searched, search
from redline.ops.campaign.verdict import Judge
from redline.ops.evidence.context import model_files
from redline.ops.measured_boot import Keep, measured_boot, stop_left_servers
from redline.ops.session import Progress, ServeSession, say
from redline.policy.workload import Step, measured_steps
from redline.targets import Target
from redline.targets.unit import boot_unit


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
        results = self.loaded.results  # each record's folders checked from the campaign's own
        if left := await stop_left_servers(server_files(results), self.target, "cell", results.parent):
            await say(self.progress, 0.0, f"stopped the {left} server(s) a killed run left behind")
        first = self._session(self.plan.cells[0], None)
        await first.check_model_path(self.loaded.base.model, "fix model: (or base.from_ladder) in the campaign")
        files = {m: await model_files(self.target, m) for m in dict.fromkeys(c.serve.model for c in self.plan.cells)}
        self.judge = Judge(self.campaign, self.plan, await self.target.host_info(), self.versions, files)
        todo = [c for c in self.plan.cells if c.done is None]
        derived_dir(self.loaded.results, "cells", create=True)  # each running cell's server record goes in it
        if self.campaign.search is not None:  # the cells a search proposes, one at a time, not the grid
            made, stopped = await search(self.loaded, self.plan, self.run_cell)
            return self._result(made, time.monotonic() - self.t0, searched=stopped)
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

    def _result(
        self, verdicts: list[CellVerdict], wall_s: float, searched: Searched | None = None
    ) -> CampaignRunResult:
        ran = [
            CellOutcome(cell=v.cell, verdict=v.verdict, reason=v.reason, boot_s=v.boot.boot_s, wall_s=v.wall_s)
            for v in verdicts
        ]
        gpu_s, took = time_taken(verdicts, wall_s, self.campaign.parallel)
        reds = _reds(verdicts)
        stopped = reds[0] if reds and not self.campaign.continue_on_red and searched is None else None
        if searched is not None:  # a red cell is feedback to a search, not its end
            reason = f"{_search_said(searched, len(ran), len(self.plan.cells))}; this run: {took}"
            hint = "call champion_select for the champion (a DRAFT: confirm it with ab_run); search.yml has each step"
        elif stopped is not None:
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
        results = self.loaded.results

        def write(name: str, text: str) -> None:
            write_cell_file(results, cell.name, name, text)

        keep = Keep(server_file(results, cell.name), cell.index, write, base=results.parent)
        boot_unit(f"cell-{cell.name}")  # a target that names its jobs (slurm) says which cell each is
        session, campaign = self._session(cell, progress), self.campaign
        then = None
        if campaign.boundary is not None:
            then = boundary_probes(
                session, cell.serve, campaign, campaign.boundary, deadline_s=campaign.bench_deadline_s, write=write
            )
        measured = await measured_boot(
            session,
            cell.serve,
            self.steps(),
            keep=keep,
            boot_deadline_s=campaign.boot_deadline_s,
            bench_deadline_s=campaign.bench_deadline_s,
            # one cell at a time holds the target alone; cells at once share it, each server with its own resources
            exclusive=campaign.parallel == 1,
            then=then,
        )
        log_file = write_cell_file(results, cell.name, "boot.log", measured.log_text)
        verdict = self.judge.verdict(cell, measured, log_file, started, time.monotonic() - t0)
        write_verdict(results, verdict)  # last: its presence means the cell is done
        await progress(1.0, f"{verdict.verdict}: {verdict.reason}")
        return verdict

    def steps(self) -> list[Step]:
        campaign = self.campaign
        return measured_steps(campaign.shapes(), campaign.concurrencies, campaign.warmup_requests, campaign.trials)


def time_taken(verdicts: Sequence[CellVerdict], wall_s: float, parallel: int) -> tuple[float, str]:
    """The GPU-seconds the cells held (each cell's wall time x the GPUs its config used), and the run's time in
    words; on a host that showed no GPU, 0 and no GPU words."""
    gpu_s = sum(v.wall_s * v.context.hardware.gpu_count for v in verdicts)
    at_once = f", up to {parallel} cells at once" if parallel > 1 else ""
    gpus = any(v.context.hardware.gpu_name for v in verdicts)
    held = f"{gpu_s:.0f} GPU-seconds" if gpus else "no GPU on this host"
    return gpu_s, f"{wall_s:.0f}s of wall time{at_once}, {held}"


def _search_said(searched: Searched, this_run: int, cells: int) -> str:
    """What the whole search booted and held, however many runs it took, and why it stopped."""
    every = searched.verdicts
    gpu_s, _ = time_taken(every, 0.0, 1)
    earlier = f" ({len(every) - this_run} in earlier runs)" if len(every) > this_run else ""
    held = f", {gpu_s:.0f} GPU-seconds in all" if any(v.context.hardware.gpu_name for v in every) else ""
    return f"the search booted {len(every)} of {cells} cells{earlier}{held} and stopped: {searched.why}"


def _reds(verdicts: Iterable[CellVerdict]) -> list[CellVerdict]:
    return [v for v in verdicts if v.verdict == "red"]


__all__ = ["Runner", "skipped"]
