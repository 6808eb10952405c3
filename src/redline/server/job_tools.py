"""The job tools: where any job stands, cancel it, list them.

They show every job, whatever its operation returns, so a result comes back as the JSON object
the job file holds (`JobView[dict]`); the tool that started the job (rung_run, smoke_test, ...)
returns it typed.
"""

from typing import Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from redline.ops.requests import JobCancelRequest, JobListRequest, JobStatusRequest
from redline.server.jobs import JobRecord, JobView
from redline.server.toolkit import READ_ONLY, STOPS, off_loop, reporter, state_of, tool

AnyJob = JobView[dict[str, Any]]


class JobList(BaseModel):
    """Jobs, newest first."""

    jobs: list[AnyJob]


def view(record: JobRecord) -> AnyJob:
    return AnyJob.of(record)


@tool(READ_ONLY, "Job status", JobStatusRequest)
async def _job_status(ctx: Context, request: JobStatusRequest) -> AnyJob:
    """Where a job stands (waiting up to wait_s for it to finish), and its result once it succeeded."""
    return view(await state_of(ctx).jobs.wait(request.job_id, request.wait_s, reporter(ctx)))


@tool(STOPS, "Cancel a job", JobCancelRequest)
async def _job_cancel(ctx: Context, request: JobCancelRequest) -> AnyJob:
    """Cancel a running job and stop the servers it started; a finished job is left as it is."""
    return view(await state_of(ctx).jobs.cancel(request.job_id))


@tool(READ_ONLY, "List jobs", JobListRequest)
async def _job_list(ctx: Context, request: JobListRequest) -> JobList:
    """The jobs of this workspace, newest first, from every server that ran them."""
    records = await off_loop(state_of(ctx).jobs.list, state=request.state, limit=request.limit)
    return JobList(jobs=[view(r) for r in records])
