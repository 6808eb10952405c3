"""What every request shares: the base model, the limits, and the field types more than one request uses."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from redline.errors import InputError
from redline.targets import Target

WAIT_MAX_S = 300.0  # the longest an MCP call blocks on a job before it returns the job id
MAX_TEXT = 64 * 1024 * 1024  # the longest boot log or bench file a request carries

Text = Annotated[str, Field(max_length=MAX_TEXT)]
# Optional text is "" when not given, never None: the MCP SDK would parse a JSON-looking string given for a
# `str | None` argument into a dict (its pre_parse_json), and a bench result is JSON.
WorkspaceFile = Annotated[str, Field(max_length=1024)]
ModelConfigFile = Annotated[
    str | None,
    Field(
        max_length=1024,
        description=(
            "The model's config.json as a file (over MCP a path inside the workspace), where the model's folder "
            "is not on this machine: the memory model sizes the model from it"
        ),
    ),
]


Replay = Annotated[
    int | None,
    Field(ge=1, le=100_000, description="Boot rung N's exact config again, as a new rung (re-verify a past result)"),
]
JobId = Annotated[str, Field(min_length=1, max_length=64, description="A job id from rung_run, smoke_test or job_list")]
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]


class Request(BaseModel):
    """What every request shares: unknown fields are refused, and a request never changes once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


ACK_FLAG = "i_understand_this_submits_jobs"
# strict: only a real true acknowledges (not "yes", not 1); anything else fails closed
Ack = Annotated[
    bool,
    Field(strict=True, description="true to boot servers and bench them on the target; without it nothing starts"),
]


def require_ack(ack: bool, tool: str, *, dry_run: bool = False, cluster: Target | None = None) -> None:
    """Fail closed: `tool` boots servers only with the acknowledgement (a real true); a dry run starts nothing and
    needs none. `cluster`: the target a ladder's rung boots on, where the acknowledgement is needed only if it
    submits to a shared cluster (a rung boots on a host of its own without it)."""
    if ack is True or dry_run:
        return
    if cluster is None:
        raise InputError(
            f"{tool} boots servers and benches them on the target: pass {ACK_FLAG}=true to start it, "
            "or dry_run=true to see every command first"
        )
    if cluster.submits_jobs:
        raise InputError(
            f"target {cluster.name!r} submits jobs to a cluster (every rung is a pod of its own): pass "
            f"{ACK_FLAG}=true to boot there"
        )
