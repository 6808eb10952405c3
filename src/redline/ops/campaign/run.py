"""campaign_run: boot each cell once, bench it at every concurrency, stop it, write its verdict.

    result = await campaign_run(path, target, i_understand_this_submits_jobs=True)

A run boots each cell once (one clean boot, through ServeSession), warms it up,
benches it at every concurrency on that one server, stops it and writes the
cell's verdict; with `parallel: N`, up to N cells at once, each on a server of its
own. A running cell's server is recorded in `<results>/cells/<cell>/server.json`
as soon as it starts, so a runner killed at any point leaves a record per server
that the next run (or a person) stops it by. A cell with a verdict is done: a
re-run resumes after it.

Here: the acknowledgement, the checks before anything boots, and the lock that
keeps one runner per campaign; the Runner that boots the cells is in
ops/campaign/runner.py.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.campaign_file import lock_file, read_verdict
from redline.ledger.derived import check_file, derived_dir
from redline.models import Widenings
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import CampaignRunResult
from redline.ops.campaign.ended import ended
from redline.ops.campaign.load import Loaded, load
from redline.ops.campaign.plan import plan_for
from redline.ops.campaign.runner import Runner, skipped
from redline.ops.evidence.known_good_apply import KnownGoodRun, campaign_known_good
from redline.ops.evidence.versions import EngineVersions
from redline.ops.request_base import ACK_FLAG, require_ack
from redline.ops.session import Progress, ServeSession, say
from redline.targets import Target

# ---- the run ------------------------------------------------------------------------------------------------


def _check_resumable(loaded: Loaded, plan: CampaignPlan) -> None:
    """A finished cell is skipped only if it ran the config planned now; a red one stops a fail-fast campaign."""
    for cell in plan.cells:
        if cell.done is None:
            continue
        verdict = read_verdict(loaded.results, cell.name)
        assert verdict is not None
        if verdict.context.serve != cell.serve or verdict.context.engine.name != cell.engine:
            raise InputError(
                f"cell {cell.name!r} has a verdict made with another serve config (or engine) than the campaign "
                f"plans now: delete {verdict_dir(loaded, cell.name)} to run it again, or restore the file"
            )
        if verdict.verdict == "red" and not loaded.campaign.continue_on_red:
            raise InputError(
                f"cell {cell.name!r} is red ({verdict.reason}): delete {verdict_dir(loaded, cell.name)} "
                "to run it again, or set continue_on_red: true to go on past it"
            )


def verdict_dir(loaded: Loaded, cell: str) -> Path:
    return loaded.results / "cells" / cell


@asynccontextmanager
async def _runner_lock(results: Path) -> AsyncIterator[None]:
    """One runner per campaign; the OS drops the lock of a runner that is killed."""
    derived_dir(results.parent, results.name, create=True)  # a real folder, and the lock a plain file
    lock = FileLock(str(check_file(lock_file(results))), timeout=0)
    try:
        lock.acquire()
    except Timeout as exc:
        raise InputError(
            f"another campaign_run is running this campaign ({lock_file(results)} is held): wait for it "
            "(campaign_status) or cancel its job"
        ) from exc
    try:
        yield
    finally:
        lock.release()


async def campaign_run(
    path: str | Path,
    target: Target,
    *,
    i_understand_this_submits_jobs: bool,
    dry_run: bool = False,
    progress: Progress | None = None,
    widening: Widenings | None = None,
    skip_known_good: bool = False,
    workspace: Path | None = None,
    versions: EngineVersions | None = None,
) -> CampaignRunResult:
    """Run the campaign on target: each cell without a verdict is booted once, benched, stopped and judged.

    Fails closed without the acknowledgement; a dry run returns the plan and starts nothing.
    Up to the campaign's `parallel` cells run at once (a target that runs that many servers at once).
    A red cell stops further cells from starting unless the campaign says continue_on_red.
    A matching known-good entry is applied to every cell unless skip_known_good; the plan's gates say so.
    `widening`: the server config's, per engine (each cell is admitted with its engine's). `workspace`: the
    server's, that base.from_ladder stays in (default: the one the file's layout names). `versions`: the engine
    versions the session knows (a dry run reuses them, a run asks again); none: asked.
    """
    target.dry_run = dry_run
    versions = versions or EngineVersions()
    require_ack(i_understand_this_submits_jobs, "campaign_run", dry_run=dry_run)
    loaded = load(path, workspace)  # read once here: the file may have changed since a call checked it
    if dry_run:
        return await campaign_dry_run(loaded, target, widening, skip_known_good, versions, progress)
    t0 = time.monotonic()  # the run's wall time counts its checks on the target too
    # the known-good hook: the engine versions asked again (an engine may have changed since a dry run)
    known_good = await campaign_known_good(loaded, target, skip_known_good, versions=versions.fresh())
    plan = prepare(loaded, target, widening, known_good)
    target.experiment = loaded.campaign.name  # a target that labels its servers (kubernetes) files them under it
    async with _runner_lock(loaded.results):
        heard = {name: run.identity.engine_version for name, run in known_good.items()}
        runner = Runner(loaded, plan, target, progress, widening, heard, t0=t0)
        return ended(loaded, await runner.run())  # every cell flagged: RunFailed, the answer kept


async def campaign_dry_run(
    loaded: Loaded,
    target: Target,
    widening: Widenings | None,
    skip_known_good: bool,
    versions: EngineVersions,
    progress: Progress | None,
) -> CampaignRunResult:
    """A dry run's answer: the plan, each cell with what its boot would submit; nothing started. Said on `progress`
    as it goes (the target's GPU and engine version are the slow part: the version is kept for the session)."""
    target.dry_run = True
    known_good = await campaign_known_good(loaded, target, skip_known_good, versions=versions, progress=progress)
    await say(progress, 0.7, "planning every cell with the known-good entry (if any) applied")
    plan = plan_for(loaded, target, widening, known_good)
    target.experiment = plan.campaign
    cells = [c.model_copy(update={"submits": await _submits(target, c)}) for c in plan.cells]
    await say(progress, 1.0, f"planned {plan.boots} boots and {plan.benches} benches; none started")
    return CampaignRunResult(
        campaign=plan.campaign,
        dry_run=True,
        plan=plan.model_copy(update={"cells": cells}),
        skipped=skipped(plan),
        reason=f"dry run: {plan.boots} boots and {plan.benches} benches would run{_at_once(plan)}; none started",
        next=f"call campaign_run with {ACK_FLAG}=true to run them",
    )


async def _submits(target: Target, cell: CellPlan) -> str | None:
    return await ServeSession(target, get_engine(cell.engine)).submission_preview(cell.serve)


def _at_once(plan: CampaignPlan) -> str:
    return f", {plan.parallel} cells at once" if plan.parallel > 1 else ""


def prepare(
    loaded: Loaded,
    target: Target,
    widening: Widenings | None = None,
    known_good: Mapping[str, KnownGoodRun] | None = None,
) -> CampaignPlan:
    """Every refusal a run can meet before it boots anything: the campaign's target, its plan, its verdicts; the plan.

    The MCP wiring calls it before it queues a job (with the campaign it read for its checks), so a bad campaign is
    an error now, not a failed job; the job calls it again with the file read at its start.
    """
    if target.name != loaded.campaign.target:
        raise InputError(
            f"the campaign runs on target {loaded.campaign.target!r}, not {target.name!r}: run it there, "
            "or change target: in the campaign file"
        )
    plan = plan_for(loaded, target, widening, known_good)
    _check_resumable(loaded, plan)
    return plan


__all__ = ["ACK_FLAG", "Runner", "campaign_dry_run", "campaign_run", "prepare"]
