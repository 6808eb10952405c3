"""What campaign_run answers: the cells a run booted, how long they held the GPUs, why it stopped and what to do
next; or, for a dry run, the plan. Read from the verdicts, no I/O beyond reading them.

    return ended(loaded, run_result(...))   # RunFailed: the job ends failed, result.failed and next say why

A run ends failed where every cell it ran failed a clean-bench check (it measured nothing a ranking can use), its
answer kept with the cause and the fix (policy/unusable.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from redline.errors import RunFailed
from redline.ledger.campaign_file import read_verdicts
from redline.models.campaign_plan import CampaignPlan
from redline.models.campaign_results import CampaignRunResult, CellOutcome, CellVerdict
from redline.ops.campaign.hint import next_hint
from redline.ops.campaign.noise import campaign_boots, keep_measured, noise_outlook
from redline.ops.campaign.search import search_state
from redline.ops.campaign_read import Loaded
from redline.ops.experiment.run import Stop
from redline.policy.unusable import unusable


def skipped(plan: CampaignPlan) -> list[str]:
    return [c.name for c in plan.cells if c.done is not None]


def time_taken(verdicts: Sequence[CellVerdict], wall_s: float, parallel: int) -> tuple[float, str]:
    """The GPU-seconds the cells held (each cell's wall time x the GPUs its config used), and the run's time in
    words; on a host that showed no GPU, 0 and no GPU words."""
    gpu_s = sum(v.wall_s * v.context.hardware.gpu_count for v in verdicts)
    at_once = f", up to {parallel} cells at once" if parallel > 1 else ""
    gpus = any(v.context.hardware.gpu_name for v in verdicts)
    held = f"{gpu_s:.0f} GPU-seconds" if gpus else "no GPU on this host"
    return gpu_s, f"{wall_s:.0f}s of wall time{at_once}, {held}"


def _search_said(loaded: Loaded, why: str | None, this_run: int, cells: int) -> str:
    """What the whole search booted and held, however many runs it took, and why it stopped."""
    every = list(read_verdicts(loaded.results, loaded.names).values())
    gpu_s, _ = time_taken(every, 0.0, 1)
    earlier = f" ({len(every) - this_run} in earlier runs)" if len(every) > this_run else ""
    held = f", {gpu_s:.0f} GPU-seconds in all" if any(v.context.hardware.gpu_name for v in every) else ""
    return f"the search booted {len(every)} of {cells} cells{earlier}{held} and stopped: {why}"


def _reds(verdicts: Iterable[CellVerdict]) -> list[CellVerdict]:
    return [v for v in verdicts if v.verdict == "red"]


def _said(
    loaded: Loaded, plan: CampaignPlan, verdicts: list[CellVerdict], stop: Stop, took: str
) -> tuple[str, CellVerdict | None]:
    """Why the run ended, and the red cell that stopped it (None: none did); what to do next is next_hint's."""
    campaign = loaded.campaign
    reds = _reds(verdicts)
    if campaign.search is not None:  # a red cell is feedback to a search, not its end
        said = _search_said(loaded, stop.why, len(verdicts), len(plan.cells))
        return f"{said}; this run: {took}", None
    if reds and not campaign.continue_on_red:
        red = reds[0]
        return (
            f"cell {red.cell!r} is red ({red.reason}); the campaign stopped there (continue_on_red is false); "
            f"{len(verdicts)} cells ran in {took}",
            red,
        )
    red_cells = f"; red: {', '.join(v.cell for v in reds)}" if reds else ", all green"
    return f"ran {len(verdicts)} cells{red_cells}; {took}", None


def run_result(
    loaded: Loaded, plan: CampaignPlan, verdicts: list[CellVerdict], stop: Stop, wall_s: float
) -> CampaignRunResult:
    """A run's answer: the cells it booted (in the plan's order), its time, why it stopped, what to do next."""
    keep_measured(loaded)  # the spreads its replicates measured, for a later run of its setup that boots none
    order = {c.name: c.index for c in plan.cells}
    if loaded.campaign.search is None:
        verdicts = sorted(verdicts, key=lambda v: (v.replicate, order[v.cell]))
    gpu_s, took = time_taken(verdicts, wall_s, loaded.campaign.parallel)
    firsts = [v for v in verdicts if v.replicate == 1]
    reason, stopped = _said(loaded, plan, firsts, stop, took)
    return CampaignRunResult(
        campaign=loaded.campaign.name,
        dry_run=False,
        ran=[
            CellOutcome(
                cell=v.cell,
                replicate=v.replicate,
                verdict=v.verdict,
                reason=v.reason,
                boot_s=v.boot.boot_s,
                wall_s=v.wall_s,
            )
            for v in verdicts
        ],
        skipped=skipped(plan),
        boots=len(verdicts),
        stopped_early=stopped is not None,
        wall_s=round(wall_s, 2),
        gpu_s=round(gpu_s, 2),
        reason=f"{reason}; {noise_said(loaded)}",
        next=next_hint(loaded, search=search_state(loaded, plan) if loaded.campaign.search else None),
    )


def noise_said(loaded: Loaded) -> str:
    """The band the campaign's cells are judged by, and where it came from (measured between boots, from earlier
    boots of its setup, or assumed)."""
    booted = sum(len(r) for r in campaign_boots(loaded).replicates.values())
    again = f"{booted} replicate boot(s) of the top cells; " if booted else ""
    return f"{again}{noise_outlook(loaded)}"


def planned_result(loaded: Loaded, plan: CampaignPlan) -> CampaignRunResult:
    """A dry run's answer: the plan, each cell with what its boot would submit; nothing started."""
    at_once = f", {plan.parallel} cells at once" if plan.parallel > 1 else ""
    again = f", then up to {plan.replicates} replicate boots of the top cells" if plan.replicates else ""
    searched = f"; the search {plan.search.resume}" if plan.search is not None else ""
    return CampaignRunResult(
        campaign=plan.campaign,
        dry_run=True,
        plan=plan,
        skipped=skipped(plan),
        reason=f"dry run: {plan.boots} boots and {plan.benches} benches would run{at_once}{again}{searched}; "
        "none started",
        next=next_hint(loaded, search=plan.search, dry_run=True),
    )


def flagged_checks(verdict: CellVerdict) -> list[str]:
    """The clean-bench checks the cell's benches failed (prefix cache, client, GPU), in order, each once: of benches
    that measured (every request completed, the server healthy after), whose flag is what kept them out."""
    found = [
        c.check
        for r in verdict.results
        for t in r.repeats
        if t.figures is not None and t.figures.all_completed and t.server_healthy_after
        for c in t.checks
        if not c.ok
    ]
    return list(dict.fromkeys(found))


def ended(loaded: Loaded, result: CampaignRunResult) -> CampaignRunResult:
    """The run's answer; RunFailed (the answer kept, naming the cause and the fix) where every cell it ran failed a
    clean-bench check."""
    verdicts = read_verdicts(loaded.results, [o.cell for o in result.ran])
    flagged = {name: flagged_checks(v) for name, v in verdicts.items()}
    if not any(flagged.values()):  # a cell that measured: the run did
        return result
    folders = ", ".join(f"cells/{name}" for name in verdicts)
    again = f"delete {folders} in the results folder {loaded.results.name}/ and run campaign_run again"
    failed = unusable(
        "cell",
        {name: v.reason if flagged[name] else None for name, v in verdicts.items()},
        [c for checks in flagged.values() for c in checks],
        again,
    )
    if failed is None:
        return result
    answer = result.model_copy(
        update={"reason": f"{result.reason}; FAILED: {failed.cause}", "next": failed.fix, "failed": failed.cause}
    )
    raise RunFailed(f"{failed.cause}. Fix: {failed.fix}", answer)


__all__ = ["ended", "flagged_checks", "planned_result", "run_result", "skipped", "time_taken"]
