"""The toolkit: what every MCP tool shares, written once.

    @tool(READ_ONLY, "Ladder status", LadderStatusRequest)   # named ladder_status: OPERATIONS names its request
    async def _ladder_status(ctx: Context, ladder: LadderArg, request: LadderStatusRequest) -> LadderStatus: ...

- the annotation kinds (READ_ONLY ... STOPS): what each tool promises a client;
- the name: the one ops/requests.py's OPERATIONS gives the request (one request per tool), so a tool function is
  named for its module alone and never as the ops function it calls;
- the input schema: the request model's fields become the tool's parameters (`expand`), beside
  the few the tool function declares itself (ctx, ladder, wait_s), so the MCP tool and the CLI,
  both generated from the request model, cannot drift apart;
- RedlineError and pydantic's ValidationError -> ToolError, whose text says what to do (`mapped`);
- StrictTool: the MCP tool as the server adds it, refusing an unknown argument by name (the SDK drops it);
- State: what the tools of one server share (config, jobs, the read cache, the engine versions, workspace paths,
  targets);
- call_progress: a dry run's progress notifications;
- run_job: start a job, wait for it while reporting progress, return it as a JobView of its result type.
"""

import functools
import inspect
import posixpath
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from redline.engines import get_engine
from redline.errors import LadderError, RedlineError, TargetError
from redline.inputs import read_text
from redline.ledger import check_derived
from redline.models import Widening
from redline.models.ladder import NextStep
from redline.offload import (
    off_loop as off_loop,  # re-exported: the tools' one way off the event loop (a thread, or a process for big texts)
)
from redline.ops.evidence.versions import EngineVersions
from redline.ops.predict.model_config import MODEL_CONFIG_FIELD, read_given_config
from redline.ops.request_base import MAX_TEXT, WAIT_MAX_S, Request, require_ack
from redline.ops.requests import OPERATIONS
from redline.ops.session import Progress, ServeSession
from redline.server.cache import LadderCache
from redline.server.config import ServerConfig, ladder_path, relative_name, resolve_in_workspace
from redline.server.job_record import now
from redline.server.jobs import JobContext, JobRecord, Jobs, JobView
from redline.server.outside import adopt_source
from redline.targets import Launch, ServerHandle, Target
from redline.validation_text import explain, unknown_argument

_T = TypeVar("_T")
_R = TypeVar("_R", bound=BaseModel)
START_BOUND_S = 180.0  # the longest a launch may hold off a cancel (a launch over SSH takes seconds)

# ---- the kinds of tool, and what their annotations promise -----------------------------------------

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# writes only to ladder files in the workspace; a second identical call is refused and changes nothing
WRITE_ONCE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# appends a rung to a ladder file each time it is called
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# boots, loads or stops servers on a target host (this one or over SSH)
BOOTS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)
STOPS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True)

# The two parameters that are not part of any request: where (a ladder file in the workspace) and how long to wait.
LadderArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1024,
        description=("The ladder file, a .yml path inside the workspace, such as ladders/llama8b-h200.yml"),
    ),
]
WaitArg = Annotated[
    float,
    Field(
        ge=0,
        le=WAIT_MAX_S,
        description=(f"Seconds to wait for the job before returning its id (at most {WAIT_MAX_S:.0f})"),
    ),
]

# ---- errors ----------------------------------------------------------------------------------------


def tool_error(exc: RedlineError) -> ToolError:
    """The one place a RedlineError becomes what the agent reads: its own message, which says what to do."""
    return ToolError(str(exc) or type(exc).__name__)


def validation_error(exc: ValidationError, model: type[BaseModel] | None = None) -> ToolError:
    """A ValidationError as the agent reads it: a line per mistake, naming the field and what to write."""
    return ToolError(explain(exc, model))


def mapped(fn: Callable[..., Awaitable[_T]], request: type[Request] | None = None) -> Callable[..., Awaitable[_T]]:
    """fn with every RedlineError (and a pydantic ValidationError from inside) raised as a ToolError."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> _T:
        try:
            return await fn(*args, **kwargs)
        except RedlineError as exc:
            raise tool_error(exc) from exc
        except ValidationError as exc:
            raise validation_error(exc, request if exc.title == getattr(request, "__name__", None) else None) from exc

    return wrapper


# ---- the tool table -------------------------------------------------------------------------------


def field_parameters(request: type[Request]) -> list[inspect.Parameter]:
    """The request's fields as keyword parameters: type, constraints, description and default as the model has them."""
    return [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[info.annotation, info],
            default=inspect.Parameter.empty if info.is_required() else info.default,
        )
        for name, info in request.model_fields.items()
    ]


def expand(fn: Callable[..., Awaitable[_T]], name: str, request: type[Request]) -> Callable[..., Awaitable[_T]]:
    """fn(..., request: R) as the SDK sees the tool `name`: one parameter per field of R instead of `request`.

    The SDK builds the input schema from the signature (titled by the function's name), so the schema is the
    request model's; the call gathers the fields back into one request and hands it to fn.
    """
    own = inspect.signature(fn, eval_str=True)
    kept = [p for name, p in own.parameters.items() if name != "request"]
    clash = {p.name for p in kept} & set(request.model_fields)
    if "request" not in own.parameters or clash:
        raise TypeError(
            f"{fn.__name__} must take `request: {request.__name__}` and no parameter named like its fields {clash}"
        )
    params = kept + field_parameters(request)

    @functools.wraps(fn)
    async def call(**kwargs: Any) -> _T:
        fields = {name: kwargs.pop(name) for name in request.model_fields if name in kwargs}
        return await fn(**kwargs, request=request(**fields))

    call.__name__ = call.__qualname__ = name
    call.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": own.return_annotation}
    return mapped(call, request)


@dataclass(frozen=True)
class ToolEntry:
    """One tool as the server adds it."""

    name: str
    fn: Callable[..., Awaitable[Any]]
    annotations: ToolAnnotations
    title: str
    request: type[Request]


TOOL_TABLE: list[ToolEntry] = []


ToolFn = Callable[..., Awaitable[_T]]


def tool_name(request: type[Request]) -> str:
    """The tool that takes `request`, as OPERATIONS names it: TypeError for a request it lists under no name or
    under several (a tool's name is written once, there)."""
    names = [name for name, taken in OPERATIONS.items() if taken is request]
    if len(names) != 1:
        raise TypeError(f"OPERATIONS must name {request.__name__} exactly once to make it a tool; it names it {names}")
    return names[0]


def tool(annotations: ToolAnnotations, title: str, request: type[Request]) -> Callable[[ToolFn[_T]], ToolFn[_T]]:
    """Add a tool to the tool table: its name is the one OPERATIONS gives its request, its description the
    function's docstring, its inputs the request's fields."""
    name = tool_name(request)

    def register(fn: ToolFn[_T]) -> ToolFn[_T]:
        TOOL_TABLE.append(ToolEntry(name, expand(fn, name, request), annotations, title, request))
        return fn

    return register


class StrictTool(Tool):
    """An MCP tool that refuses what the SDK would let by: an unknown argument (the SDK drops it silently) is
    refused by name with the closest valid one, and arguments that fail the input schema are said a line per
    mistake (not pydantic's text and URL). The input schema says so: additionalProperties is false."""

    @classmethod
    def of(cls, entry: ToolEntry) -> "StrictTool":
        made = cls.from_function(
            entry.fn, name=entry.name, title=entry.title, annotations=entry.annotations, structured_output=True
        )
        made.parameters["additionalProperties"] = False
        return cast(StrictTool, made)  # from_function builds cls

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        model = self.fn_metadata.arg_model
        known = {info.alias or name for name, info in model.model_fields.items()}  # as the wire names them
        unknown = [name for name in arguments if name not in known]
        if unknown:
            lines = [unknown_argument(name, known) for name in unknown]
            raise ToolError(f"Error executing tool {self.name}: " + "\n".join(lines))
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:  # the SDK's own check of the arguments against the input schema
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"Error executing tool {self.name}: {explain(cause, model)}") from cause


# ---- what the tools of one server share ------------------------------------------------------------


@dataclass
class State:
    """What the tools of one running server share."""

    config: ServerConfig
    jobs: Jobs
    cache: LadderCache = field(default_factory=LadderCache)
    # each target's engine version, asked once for the session (a dry run's slow part; a run reuses it)
    versions: EngineVersions = field(default_factory=EngineVersions)

    def ladder(self, name: str) -> tuple[Path, str]:
        """The ladder file's absolute path, and its name as jobs key it (normalised, relative)."""
        path = ladder_path(self.config.workspace, name)
        return path, relative_name(self.config.workspace, path)

    def file(self, name: str, what: str) -> Path:
        return resolve_in_workspace(self.config.workspace, name, what=what)

    def read_text(self, name: str, what: str) -> str:
        return read_text(self.file(name, what), f"{what} {name!r} (in the workspace)", max_bytes=MAX_TEXT)

    def read_model_config(self, name: str) -> str:
        """A request's model_config_file (a workspace file), read with config.json's 1 MiB cap (security.md, 38.3)."""
        return read_given_config(self.file(name, MODEL_CONFIG_FIELD), f"{name!r} (in the workspace)")

    def adopt_source(self, source: str) -> Path:
        """The ladder file ladder_adopt may read (server/outside.py adopt_source)."""
        return adopt_source(self.config, source, self.file)

    def check_target(self, name: str) -> None:
        """Refuse an unknown target now, before any job exists."""
        self.config.open_target(name)

    def admit(self, target: str, engine: str, step: NextStep, widening: Widening | None, ack: bool = False) -> None:
        """Refuse now, before any job exists: an unknown target, a cluster target without the acknowledgement,
        and a serve config that the engine's allowlist (as this server's config widens it) or the target's own
        env refuses."""
        opened = self.config.open_target(target)  # not connected: only its name and engine env are read
        require_ack(ack, "rung_run", cluster=opened)
        if step.rung is not None:
            ServeSession(opened, get_engine(engine), None, widening).admit(step.rung)

    def check_derived(self, ladder: Path, next_rung: int | None = None) -> None:
        """Refuse a ladder whose derived folders or files (<ladder>.runs, its server.json, the lock, the next
        rung's folder and boot log) were replaced by a symlink, FIFO or device."""
        check_derived(ladder, next_rung)

    @asynccontextmanager
    async def recording_target(self, name: str, job: JobContext) -> AsyncIterator[Target]:
        """A target whose start() records each server in the job's file, so none is ever orphaned.

        The launch is one unit with its record: its run folder is on disk in the job before the engine
        is launched (a redline killed mid-launch leaves that to find it by), and the launch and the
        handle's record are shielded from a cancel or a shutdown, which wait for both.
        """
        target = await off_loop(self.config.open_target, name)  # reads the targets file
        start = target.start

        @functools.wraps(start)
        async def start_and_record(
            *args: Any,
            log_path: str,
            run_dir: str | None = None,
            **kwargs: Any,
        ) -> ServerHandle:
            run_dir = run_dir or target.new_run_dir()
            await job.launching(
                Launch(target=target.name, run_dir=run_dir, at=now(), log_path=posixpath.join(run_dir, log_path))
            )
            with anyio.CancelScope(shield=True) as shield:
                shield.deadline = anyio.current_time() + START_BOUND_S
                handle = await start(*args, log_path=log_path, run_dir=run_dir, **kwargs)
                await job.add_process(handle)
            if shield.cancelled_caught:  # the launch hung: the job's launch note still finds what it started
                raise TargetError(
                    f"launching on target {target.name} took over {START_BOUND_S:.0f} s; "
                    "check that the target is reachable"
                )
            return handle

        target.start = start_and_record  # type: ignore[method-assign]
        async with target:
            yield target

    def refuse_if_busy(self, ladder: str) -> None:
        busy = self.jobs.active(ladder=ladder)
        if busy is not None:
            raise LadderError(
                f"job {busy.id} ({busy.tool}) is still {busy.state} on this ladder: wait for it with "
                "job_status or stop it with job_cancel first"
            )


async def stop_server(config: ServerConfig, leftover: ServerHandle | Launch) -> bool:
    """Stop a server a job recorded (a handle, or a launch found by its run folder), through its target,
    if it still runs; True when it did."""
    async with await off_loop(config.open_target, leftover.target) as target:
        handle = await target.launched(leftover) if isinstance(leftover, Launch) else leftover
        if handle is None or not await target.is_alive(handle):
            return False
        await target.stop(handle)
        return True


def state_of(ctx: Context) -> State:
    return cast(State, ctx.request_context.lifespan_context)  # the lifespan in app.py yields the State


# ---- jobs --------------------------------------------------------------------------------------------


async def run_job(
    ctx: Context,
    result: type[_R],
    tool: str,
    operation: Callable[[JobContext], Awaitable[_R]],
    *,
    ladder: str | None,
    target: str | None,
    args: dict[str, Any],
    wait_s: float,
) -> JobView[_R]:
    """Start a job, wait up to wait_s reporting progress, and return it, finished or still running,
    with its result read back as `result` (RungOutcome for a rung, a campaign's outcome for a campaign)."""
    jobs = state_of(ctx).jobs
    record = await jobs.start(tool, operation, ladder=ladder, target=target, args=args)
    record = await jobs.wait(record.id, wait_s, reporter(ctx))
    if record.state in ("failed", "cancelled", "interrupted"):
        raise RedlineError(f"{record.error} (job {record.id}, {record.state})")
    return JobView[result].of(record)  # type: ignore[valid-type]


def call_progress(ctx: Context) -> Progress:
    """Progress notifications for a call that runs no job (a dry run): the value is the fraction done, and only
    ever grows (as MCP requires); the message says what the call is doing."""
    last = -1.0

    async def report(fraction: float, text: str) -> None:
        nonlocal last
        last = max(round(fraction, 3), last + 0.001)
        await ctx.report_progress(last, None, text)

    return report


def reporter(ctx: Context) -> Callable[[JobRecord, float], Awaitable[None]]:
    """Progress notifications for one waiting call: the value counts seconds waited and only ever grows (as MCP
    requires); the message, the job's fraction and its latest line, says how long ago a line said before was said."""
    last, said = -1.0, ("", 0.0)

    async def report(job: JobRecord, elapsed: float) -> None:
        nonlocal last, said
        last, said = max(round(elapsed, 3), last + 0.001), said if job.message == said[0] else (job.message, elapsed)
        again = f" (said {elapsed - said[1]:.0f}s ago)" if elapsed - said[1] >= 1 else ""
        await ctx.report_progress(last, None, f"{job.tool} {job.id}: {job.progress:.0%} {job.message}{again}".strip())

    return report
