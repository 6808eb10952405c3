"""The one launcher of the tools that boot servers (rung_run, smoke_test, and the experiments: campaign_run, ab_run).

    return await launch(ctx, RungView, RungRunResult, "rung_run", run, target=..., args={...}, wait_s=wait_s)
    return await launch_experiment(ctx, AbRunView, AbResult, "ab_run", opened, target=target, dry_run=..., ...)

A tool checks what it can refuse at once (the acknowledgement first, then its inputs), then either answers a dry
run at once (no job: the plan in `result`) or launches its operation as a job on a recording target, so a cancel
stops every server the job started; the view answers the call, finished or still running. An experiment's tool gives
how its experiment is opened on a target (ops/experiment/run.py: a plan and a judge), and the one wing runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from redline.ops.experiment import run as experiment
from redline.ops.experiment.run import Opener
from redline.ops.session import Progress
from redline.server.job_record import now
from redline.server.jobs import JobContext, JobView
from redline.server.toolkit import call_progress, run_job, state_of
from redline.targets import Target

_R = TypeVar("_R", bound=BaseModel)
_V = TypeVar("_V", bound=BaseModel)

TargetOperation = Callable[[Target, Progress], Awaitable[_R]]


async def launch(
    ctx: Context,
    view: type[_V],
    result: type[_R],
    tool: str,
    run: TargetOperation[_R],
    *,
    target: str,
    args: dict[str, Any],
    wait_s: float,
    ladder: str | None = None,
) -> _V:
    """Run `run(target, progress)` as a job on the named target, each server it starts recorded in the job's file;
    the job's view once it ends within wait_s, else while it runs (its id for job_status)."""
    state = state_of(ctx)

    async def operation(job: JobContext) -> _R:
        recording: AbstractAsyncContextManager[Target] = state.recording_target(target, job)
        async with recording as t:
            return await run(t, job.progress)

    job = await run_job(ctx, result, tool, operation, ladder=ladder, target=target, args=args, wait_s=wait_s)
    return job if isinstance(job, view) else view.model_validate(job.model_dump())


class RunView(JobView[_R]):
    """An experiment tool's answer (campaign_run, ab_run): the job that runs it, or a dry run's plan (no job)."""

    job_id: str | None = Field(  # type: ignore[assignment]
        description="Pass to job_status (to wait for it) or job_cancel; null for a dry run, which queues no job"
    )


async def launch_experiment(
    ctx: Context,
    view: type[RunView[_R]],
    result: type[_R],
    tool: str,
    opened: Opener[_R],
    *,
    target: Target,
    dry_run: bool,
    said: Callable[[_R], tuple[str, str]],
    args: dict[str, Any],
    wait_s: float,
) -> RunView[_R]:
    """A dry run answered at once on `target` (its progress as notifications, nothing started, no job; `said`: its
    answer's headline and next step); else the experiment opened and run as a job on the target of that name,
    recorded, so a cancel stops its servers."""
    widening = state_of(ctx).config.widen  # each engine's, from the server config: never a tool argument
    if dry_run:
        progress, target.dry_run = call_progress(ctx), True  # a dry run creates nothing, on any target
        async with target:  # a dry run reads the target's GPU and engine versions, for the known-good entry
            answer = await experiment.start(opened, target, dry_run=True, tool=tool, progress=progress)
        return _dry_run_view(view, tool, answer, *said(answer), target=target.name)

    async def run(t: Target, progress: Progress) -> _R:
        return await experiment.start(opened, t, dry_run=False, tool=tool, progress=progress, widening=widening)

    return await launch(ctx, view, result, tool, run, target=target.name, args=args, wait_s=wait_s)


def _dry_run_view(view: type[_V], tool: str, result: BaseModel, message: str, next: str, *, target: str | None) -> _V:
    """A dry run as its tool answers: done at once, the plan in `result`, no job behind it."""
    at = now()
    return view.model_validate(
        {
            "job_id": None,
            "tool": tool,
            "state": "succeeded",
            "done": True,
            "progress": 1.0,
            "message": message,
            "target": target,
            "created_at": at,
            "started_at": at,
            "finished_at": at,
            "result": result,
            "hint": f"a dry run: no job was queued and nothing started; {next}",
        }
    )


__all__ = ["JobView", "TargetOperation", "RunView", "launch", "launch_experiment"]
