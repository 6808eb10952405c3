"""The one launcher of the tools that boot servers (rung_run, smoke_test, campaign_run, ab_run).

    return await launch(ctx, AbRunView, AbResult, "ab_run", run, target=spec.target, args={...}, wait_s=wait_s)
    return dry_run_view(AbRunView, "ab_run", result, target=spec.target, message=result.summary, next=result.next)

A tool checks what it can refuse at once (the acknowledgement first, then its inputs), then either answers a dry
run at once (no job: the plan in `result`) or launches its operation as a job on a recording target, so a cancel
stops every server the job started; the view answers the call, finished or still running.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from redline.ops.session import Progress
from redline.server.job_record import now
from redline.server.jobs import JobContext, JobView
from redline.server.toolkit import run_job, state_of
from redline.targets import Target

R = TypeVar("R", bound=BaseModel)
V = TypeVar("V", bound=BaseModel)

Operation = Callable[[Target, Progress], Awaitable[R]]


async def launch(
    ctx: Context,
    view: type[V],
    result: type[R],
    tool: str,
    run: Operation[R],
    *,
    target: str,
    args: dict[str, Any],
    wait_s: float,
    ladder: str | None = None,
) -> V:
    """Run `run(target, progress)` as a job on the named target, each server it starts recorded in the job's file;
    the job's view once it ends within wait_s, else while it runs (its id for job_status)."""
    state = state_of(ctx)

    async def operation(job: JobContext) -> R:
        recording: AbstractAsyncContextManager[Target] = state.recording_target(target, job)
        async with recording as t:
            return await run(t, job.progress)

    job = await run_job(ctx, result, tool, operation, ladder=ladder, target=target, args=args, wait_s=wait_s)
    return job if isinstance(job, view) else view.model_validate(job.model_dump())


def dry_run_view(view: type[V], tool: str, result: BaseModel, *, target: str | None, message: str, next: str) -> V:
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


__all__ = ["JobView", "Operation", "dry_run_view", "launch"]
