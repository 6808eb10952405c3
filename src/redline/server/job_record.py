"""A job as its file holds it (`JobRecord`) and as a tool shows it (`JobView[R]`, R the result's type).

A job file is read by any later redline, so fields are only ever added, with defaults;
`ServerHandle` still reads the flat handles older files hold.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from redline.identity import Owner, start_ticks, where
from redline.ops.request_base import WAIT_MAX_S, JobState
from redline.targets import Launch, ServerHandle

__all__ = ["ACTIVE", "JobRecord", "JobView", "now", "start_ticks"]

ACTIVE: tuple[JobState, ...] = ("queued", "running")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class JobRecord(BaseModel):
    """One job, as its file says."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tool: str
    state: JobState
    ladder: str | None = None
    target: str | None = None
    args: dict[str, Any] = {}
    owner_pid: int
    owner_start_ticks: int | None = None
    # where owner_pid means something (absent in files older than these fields: judged as this host's)
    owner_host: str | None = None
    owner_boot_id: str | None = None
    owner_pid_ns: str | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    progress: float = 0.0
    message: str = ""
    processes: list[ServerHandle] = []
    # servers being launched: written before the launch, dropped once the handle is in `processes`
    launches: list[Launch] = []
    result: dict[str, Any] | None = None
    error: str | None = None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def owner(self) -> Owner:
        return Owner(
            host=self.owner_host or "?",
            boot_id=self.owner_boot_id,
            pid_ns=self.owner_pid_ns,
            pid=self.owner_pid,
            start_ticks=self.owner_start_ticks,
        )

    def owner_where(self) -> str:
        """ "here", "elsewhere" or "gone": whether this process can judge the owner's pid (identity.where)."""
        return where(self.owner_host, self.owner_boot_id, self.owner_pid_ns)

    def leftovers(self) -> list[ServerHandle | Launch]:
        """What the job started, or may have: its handles, and launches not yet matched by one."""
        recorded = {h.run_dir for h in self.processes}
        return [*self.processes, *(launch for launch in self.launches if launch.run_dir not in recorded)]


ResultT = TypeVar("ResultT")


class JobView(BaseModel, Generic[ResultT]):
    """A job as a tool reports it: where it stands, and its result once it succeeded."""

    job_id: str = Field(description="Pass to job_status (to wait for it) or job_cancel")
    tool: str
    state: JobState = Field(
        description="queued or running: not done yet; succeeded, failed, cancelled or interrupted: done"
    )
    done: bool
    progress: float = Field(description="0 to 1, as the operation reports it")
    message: str = Field(description="The operation's latest progress line")
    ladder: str | None = None
    target: str | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = Field(None, description="Why the job failed, was cancelled or was interrupted")
    result: ResultT | None = Field(
        None,
        description="The operation's result, once it succeeded; or once it failed for measuring nothing usable "
        "(every trial or cell failed): its summary and next name the cause and the fix",
    )
    hint: str = Field(description="What to do next, in one sentence")

    @classmethod
    def of(cls, record: JobRecord) -> JobView[ResultT]:
        return cls(
            job_id=record.id,
            tool=record.tool,
            state=record.state,
            done=not record.active,
            progress=record.progress,
            message=record.message,
            ladder=record.ladder,
            target=record.target,
            created_at=record.created_at,
            started_at=record.started_at,
            finished_at=record.finished_at,
            error=record.error,
            result=record.result,
            hint=hint(record),
        )


def hint(record: JobRecord) -> str:
    if record.active:
        return (
            f"still {record.state}: call job_status with job_id={record.id!r} and wait_s up to "
            f"{WAIT_MAX_S:.0f} to wait for it, or job_cancel to stop it"
        )
    if record.state == "succeeded":
        return "done: the result says what happened and, where it has a `next`, what to do next"
    if record.state == "interrupted":
        return "the job did not finish; ladder_status shows what was recorded, then run the step again"
    if record.state == "cancelled":
        return "cancelled; its server was stopped; ladder_next_rung says what to do next"
    if record.result is not None:
        return f"failed: {record.error}; the result has every trial's or cell's figures and checks"
    return f"failed: {record.error}"
