"""The MCP server: one tool per redline step, each a thin wrapper over redline.tools.

    server = build_server(load_server_config("redline-server.yml"))
    server.run()                                        # stdio
    async with Client(server) as client: ...            # in-process, in tests

What every tool shares is written once below: the annotations (four kinds),
the RedlineError -> ToolError mapping (`tool_error`), ladder paths resolved
inside the workspace, blocking file work moved off the event loop, and jobs
for anything that boots or benchmarks (`_run_job`).
"""

import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from redline import __version__
from redline.engines import vllm
from redline.errors import InputError, LadderError, RedlineError
from redline.inputs import read_text
from redline.models import BootSignals
from redline.models.ladder import Ceiling, FixedKnobs, Ladder, LadderStatus, NextStep, Policy
from redline.server.config import ServerConfig, relative_name, resolve_in_workspace
from redline.server.jobs import (
    WAIT_DEFAULT_S, WAIT_MAX_S, JobContext, JobRecord, Jobs, JobState, JobView, running_jobs,
)
from redline.targets import ProcessHandle, Target, load_targets, open_target
from redline.tools import ladder as ladder_ops
from redline.tools import rung as rung_ops
from redline.tools.rung import RungOutcome

log = logging.getLogger("redline.server")

MAX_TEXT = 64 * 1024 * 1024  # the longest boot log or bench file a tool reads
LADDER_SUFFIXES = (".yml", ".yaml")
LADDER_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=,-]*$")
MAX_LISTED_LADDERS = 200
T = TypeVar("T")

INSTRUCTIONS = """\
redline finds the highest safe --max-model-len and --max-num-batched-tokens for one model on one GPU,
one clean boot per rung, every rung kept in a ladder file inside this server's workspace.
Start with ladder_status (or ladder_init for a new model), then follow `next.route` each time:
run_rung -> rung_run, smoke_test -> smoke_test, record_ceiling -> ceiling_record, diagnose -> read the
rung's reason and fix the cause, done -> the ceiling is recorded. rung_run and smoke_test run as jobs:
they return the result if it comes within wait_s, else a job id for job_status."""

# ---- the four kinds of tool, and what their annotations promise -----------------------------------

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# writes only to ladder files in the workspace; a second identical call is refused and changes nothing
WRITE_ONCE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# appends a rung to a ladder file each time it is called
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
# boots, loads or stops servers on a target host (this one or over SSH)
BOOTS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)
STOPS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True)

LadderArg = Annotated[str, Field(min_length=1, max_length=1024, description="The ladder file, a .yml path inside the workspace, such as ladders/llama8b-h200.yml")]
TargetArg = Annotated[str, Field(min_length=1, max_length=128, description="A target name from the server's targets file, such as local")]
ReplayArg = Annotated[int | None, Field(ge=1, le=100_000, description="Boot rung N's exact config again, as a new rung (re-verify a past result)")]
WaitArg = Annotated[float, Field(ge=0, le=WAIT_MAX_S, description=f"Seconds to wait for the job before returning its id (at most {WAIT_MAX_S:.0f})")]
JobIdArg = Annotated[str, Field(min_length=1, max_length=64, description="A job id from rung_run, smoke_test or job_list")]
Tokens = Annotated[int, Field(gt=0, le=1 << 26)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
# Optional text is "" when not given, never None: the SDK would parse a JSON-looking string given for a
# `str | None` argument into a dict (its pre_parse_json), and a bench result is JSON.
OptionalFile = Annotated[str, Field(max_length=1024, description="A file inside the workspace")]


class JobList(BaseModel):
    """Jobs, newest first."""

    jobs: list[JobView[RungOutcome]]


class LadderEntry(BaseModel):
    """One ladder file in the workspace."""

    ladder: str
    model: str
    rungs: int
    next: str = Field(description="The route the ladder is on: run_rung, smoke_test, record_ceiling, diagnose or done")
    ceiling_max_model_len: int | None = None


# ---- shared: errors, state, paths ----------------------------------------------------------------


def tool_error(exc: RedlineError) -> ToolError:
    """The one place a RedlineError becomes what the agent reads: its own message, which says what to do."""
    return ToolError(str(exc) or type(exc).__name__)


def _validation_error(exc: ValidationError) -> ToolError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "value"
    return ToolError(f"{where}: {first['msg']}")


class LadderCache:
    """Read-only ladder results by file content: a ladder is parsed again only when its bytes changed.

    The ladder read (ruamel round-trip YAML) is most of a read-only call; what it gives is a
    pure function of the file, so the content's hash is a safe key.
    """

    def __init__(self, size: int = 64) -> None:
        self._data: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, fn: Callable[..., T], path: Path, *args: Any) -> T:
        try:
            digest = hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
        except OSError:
            return fn(path, *args)  # missing or unreadable: let fn say so in its own words
        key = (fn.__module__, fn.__qualname__, str(path), args, digest)
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]  # type: ignore[no-any-return]
        value = fn(path, *args)
        with self._lock:
            self._data[key] = value
            while len(self._data) > self._size:
                self._data.popitem(last=False)
        return value


@dataclass
class State:
    """What the tools of one running server share."""

    config: ServerConfig
    jobs: Jobs
    cache: LadderCache = field(default_factory=LadderCache)

    def ladder(self, name: str) -> tuple[Path, str]:
        """The ladder file's absolute path, and its name as jobs key it (normalised, relative)."""
        path = ladder_path(self.config, name)
        return path, relative_name(self.config.workspace, path)

    def file(self, name: str, what: str) -> Path:
        return resolve_in_workspace(self.config.workspace, name, what=what)

    def check_target(self, name: str) -> None:
        """Refuse an unknown target now, before any job exists."""
        open_target(name, load_targets(self.config.targets))

    @asynccontextmanager
    async def recording_target(self, name: str, job: JobContext) -> AsyncIterator[Target]:
        """A target whose start() notes each server it starts in the job's file, so none is ever orphaned."""
        target = open_target(name, load_targets(self.config.targets))
        start = target.start

        @functools.wraps(start)
        async def start_and_record(*args: Any, **kwargs: Any) -> ProcessHandle:
            handle = await start(*args, **kwargs)
            await job.add_process(handle)
            return handle

        target.start = start_and_record  # type: ignore[method-assign]
        async with target:
            yield target

    def refuse_if_busy(self, ladder: str) -> None:
        busy = self.jobs.active(ladder=ladder)
        if busy is not None:
            raise LadderError(f"job {busy.id} ({busy.tool}) is still {busy.state} on this ladder: wait for it with "
                              "job_status or stop it with job_cancel first")


async def stop_process(config: ServerConfig, handle: ProcessHandle) -> bool:
    """Stop a process group a job recorded, through its target, if it still runs; True when it did."""
    async with open_target(handle.target, load_targets(config.targets)) as target:
        if not await target.is_alive(handle):
            return False
        await target.stop(handle)
        return True


def ladder_path(config: ServerConfig, name: str) -> Path:
    """A ladder file: inside the workspace, a .yml, and named in plain characters (it ends up in commands and logs)."""
    path = resolve_in_workspace(config.workspace, name, what="ladder")
    if path.suffix not in LADDER_SUFFIXES:
        raise InputError(f"ladder {name[:80]!r} must be a .yml file inside the workspace, such as ladders/llama8b.yml")
    if not all(LADDER_PART.match(part) for part in PurePosixPath(name).parts):
        raise InputError(f"ladder {name[:80]!r}: name ladder files and folders with letters, digits and . _ - + @ = , "
                         "only, starting with a letter or digit")
    return path


def _state(ctx: Context) -> State:
    return ctx.request_context.lifespan_context  # type: ignore[no-any-return]


async def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Blocking file work (YAML, locks, a long log) in a worker thread, so jobs keep reporting."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


def _read_text(state: State, name: str, what: str) -> str:
    return read_text(state.file(name, what), f"{what} {name!r} (in the workspace)", max_bytes=MAX_TEXT)


async def _run_job(
    ctx: Context, tool: str, operation: Callable[[JobContext], Awaitable[BaseModel]], *,
    ladder: str, target: str, args: dict[str, Any], wait_s: float,
) -> JobView[RungOutcome]:
    """Start a job, wait up to wait_s reporting progress, and return it: finished, or still running."""
    jobs = _state(ctx).jobs
    record = await jobs.start(tool, operation, ladder=ladder, target=target, args=args)
    record = await jobs.wait(record.id, wait_s, _reporter(ctx))
    if record.state in ("failed", "cancelled", "interrupted"):
        raise RedlineError(f"{record.error} (job {record.id}, {record.state})")
    return _view(record)


def _reporter(ctx: Context) -> Callable[[JobRecord, float], Awaitable[None]]:
    """Progress notifications for one waiting call: the value counts seconds waited and only ever grows
    (as MCP requires); the message carries the job's own fraction and its latest line."""
    last = -1.0

    async def report(job: JobRecord, elapsed: float) -> None:
        nonlocal last
        last = max(round(elapsed, 3), last + 0.001)
        await ctx.report_progress(last, None, f"{job.tool} {job.id}: {job.progress:.0%} {job.message}".strip())

    return report


def _view(record: JobRecord) -> JobView[RungOutcome]:
    try:
        return JobView[RungOutcome].of(record)
    except ValidationError:  # a result of another shape (an older redline): say so rather than crash
        bare = record.model_copy(update={"result": None, "error": (record.error or "") + " (result not shown: unknown shape)"})
        return JobView[RungOutcome].of(bare)


# ---- the tools -----------------------------------------------------------------------------------

TOOLS: list[tuple[Callable[..., Awaitable[Any]], ToolAnnotations, str]] = []


def mapped(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """fn with every RedlineError (and a pydantic ValidationError from inside) raised as a ToolError."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return await fn(*args, **kwargs)
        except RedlineError as exc:
            raise tool_error(exc) from exc
        except ValidationError as exc:
            raise _validation_error(exc) from exc

    return wrapper


def tool(annotations: ToolAnnotations, title: str) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Register a tool: its name is the function's, its description the docstring, its errors mapped."""

    def register(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        TOOLS.append((mapped(fn), annotations, title))
        return fn

    return register


@tool(WRITE_ONCE, "Start a ladder")
async def ladder_init(
    ctx: Context,
    ladder: LadderArg,
    model: Annotated[str, Field(min_length=1, max_length=200, description="A short key for the model, such as llama-3.1-8b")],
    model_path: Annotated[str, Field(min_length=1, max_length=4096, description="The model as `vllm serve` takes it: a path or hub id")],
    floor_max_model_len: Annotated[Tokens, Field(description="max_model_len of a boot known to work; the climb starts here")],
    floor_max_num_batched_tokens: Annotated[Tokens, Field(description="max_num_batched_tokens of that known-good boot")],
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, description="Held fixed through the climb")] = 0.9,
    min_concurrency: Annotated[int, Field(ge=1, le=1 << 16, description="Max-length requests the ceiling must hold at once")] = 1,
    policy: Annotated[Policy, Field(description="signal: next rung from the KV figures the boot log gives; doubling: double each time")] = "signal",
    gpu_name: Annotated[str | None, Field(max_length=200)] = None,
    gpu_memory_gib: Annotated[float | None, Field(gt=0, le=1 << 20)] = None,
    gpu_count: Annotated[int, Field(ge=1, le=1024)] = 1,
    engine_version: Annotated[str | None, Field(max_length=64, description="The vLLM version every rung must boot with")] = None,
    max_position_embeddings: Annotated[Tokens | None, Field(description="The model's positional limit; read from config.json when the model path is a local folder")] = None,
    allow_long_context: Annotated[bool, Field(description="Climb past max_position_embeddings (sets VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)")] = False,
    max_num_batched_tokens_cap: Annotated[Tokens | None, Field(description="Stop climbing max_num_batched_tokens here")] = None,
    fixed: Annotated[FixedKnobs | None, Field(description=(  # type: ignore[valid-type]
        "More serve knobs held fixed through the climb, as `vllm serve` takes them: port, enforce_eager, load_format, "
        "kv_cache_dtype, max_num_seqs, extra_flags (each --name or --name=value), env, ..."))] = None,
    boot_deadline_s: Annotated[float, Field(gt=0, le=86400, description="How long one boot may take before it counts as timeout_boot")] = 3600,
    smoke_deadline_s: Annotated[float, Field(gt=0, le=86400, description="How long one smoke test may take")] = 3600,
) -> Ladder:
    """Create a new ladder file for one model on one GPU, from a boot known to work (refused if the file exists)."""
    path, _ = _state(ctx).ladder(ladder)
    return await _off_loop(
        ladder_ops.ladder_init, path, model=model, model_path=model_path, floor_max_model_len=floor_max_model_len,
        floor_max_num_batched_tokens=floor_max_num_batched_tokens, gpu_memory_utilization=gpu_memory_utilization,
        min_concurrency=min_concurrency, policy=policy, gpu_name=gpu_name, gpu_memory_gib=gpu_memory_gib,
        gpu_count=gpu_count, engine_version=engine_version, max_position_embeddings=max_position_embeddings,
        allow_long_context=allow_long_context, max_num_batched_tokens_cap=max_num_batched_tokens_cap,
        fixed=fixed.model_dump(exclude_unset=True) if fixed is not None else None,
        boot_deadline_s=boot_deadline_s, smoke_deadline_s=smoke_deadline_s,
    )


@tool(READ_ONLY, "Ladder status")
async def ladder_status(ctx: Context, ladder: LadderArg) -> LadderStatus:
    """Every rung of a ladder, one row each, and where the climb stands (`next.route` says what to call next)."""
    state = _state(ctx)
    path, name = state.ladder(ladder)
    status = await _off_loop(state.cache.get, ladder_ops.ladder_status, path)
    return status.model_copy(update={"path": name})


@tool(READ_ONLY, "Next rung")
async def ladder_next_rung(ctx: Context, ladder: LadderArg, replay: ReplayArg = None) -> NextStep:
    """The ladder's next step and why: the serve config of the next rung, or smoke_test, record_ceiling, diagnose or done."""
    state = _state(ctx)
    path, _ = state.ladder(ladder)
    return await _off_loop(state.cache.get, ladder_ops.ladder_next, path, replay)


@tool(BOOTS, "Boot the next rung")
async def rung_run(
    ctx: Context, ladder: LadderArg, target: TargetArg, replay: ReplayArg = None, wait_s: WaitArg = WAIT_DEFAULT_S,
) -> JobView[RungOutcome]:
    """Boot the ladder's next rung (or replay rung N) on a target, cleanly, read its log and append the rung.

    Runs as a job: stops the server the ladder left up, boots, waits for health. Returns the
    recorded rung and the next step if it ends within wait_s, else the job id for job_status.
    """
    state = _state(ctx)
    path, name = state.ladder(ladder)
    state.refuse_if_busy(name)
    await _off_loop(ladder_ops.expect_step, path, "run_rung", replay)
    state.check_target(target)

    async def operation(job: JobContext) -> RungOutcome:
        async with state.recording_target(target, job) as t:
            return await rung_ops.rung_run(path, t, replay=replay, progress=job.progress)

    return await _run_job(ctx, "rung_run", operation, ladder=name, target=target,
                          args={"replay": replay}, wait_s=wait_s)


@tool(BOOTS, "Smoke-test the running rung")
async def smoke_test(
    ctx: Context, ladder: LadderArg,
    target: Annotated[str, Field(max_length=128, description="The target the rung's server runs on; empty: the one the ladder recorded")] = "",
    wait_s: WaitArg = WAIT_DEFAULT_S,
) -> JobView[RungOutcome]:
    """Load the rung that just booted with near-max-length requests (the engine's own bench client) and record pass or fail.

    Runs as a job, like rung_run.
    """
    state = _state(ctx)
    path, name = state.ladder(ladder)
    state.refuse_if_busy(name)
    step = await _off_loop(ladder_ops.expect_step, path, "smoke_test")
    server = await _off_loop(rung_ops.load_server, path)
    on = target or (server.handle.target if server else None)
    if on is None:
        raise LadderError(f"no server of this ladder is running: call rung_run with replay={step.rung_index} to boot it again")
    state.check_target(on)

    async def operation(job: JobContext) -> RungOutcome:
        async with state.recording_target(on, job) as t:
            return await rung_ops.smoke_test(path, t, progress=job.progress)

    return await _run_job(ctx, "smoke_test", operation, ladder=name, target=on, args={}, wait_s=wait_s)


@tool(APPEND, "Record a boot run by hand")
async def rung_record(
    ctx: Context, ladder: LadderArg,
    log_text: Annotated[Text, Field(description="The full output of `vllm serve` (or give log_file)")] = "",
    log_file: Annotated[OptionalFile, Field(description="The boot log as a file inside the workspace (or give log_text)")] = "",
    bench_json_text: Annotated[Text, Field(description="Optional: the JSON `vllm bench serve --save-result` wrote for the smoke test")] = "",
    bench_file: Annotated[OptionalFile, Field(description="Optional: that JSON as a file inside the workspace")] = "",
) -> RungOutcome:
    """Record a boot that a person ran by hand, and optionally its smoke-test result, in the ladder.

    Give the boot log as text or as a workspace file. A smoke result alone fills in the last
    rung's smoke test. Returns the rung as recorded and the ladder's next step.
    """
    state = _state(ctx)
    path, name = state.ladder(ladder)
    state.refuse_if_busy(name)
    if log_text and log_file or bench_json_text and bench_file:
        raise InputError("give the boot log either as log_text or as log_file (and the bench either as text or file), not both")
    log = await _off_loop(_read_text, state, log_file, "log_file") if log_file else log_text
    bench = await _off_loop(_read_text, state, bench_file, "bench_file") if bench_file else bench_json_text
    if not log and not bench:
        raise InputError("nothing to record: give the boot log (log_text or log_file), a smoke result (bench_json_text or bench_file), or both")
    rung = None
    if log:
        rung = await _off_loop(ladder_ops.rung_record, path, log, log_name=log_file or "pasted by the caller")
    if bench:
        rung = await _off_loop(ladder_ops.smoke_record, path, bench)
    return RungOutcome(rung=rung, next=await _off_loop(ladder_ops.ladder_next, path))


@tool(STOPS, "Record the ceiling")
async def ceiling_record(ctx: Context, ladder: LadderArg) -> Ceiling:
    """Record the ceiling the climb found (only when the next step is record_ceiling), and stop the server the ladder left up."""
    state = _state(ctx)
    path, name = state.ladder(ladder)
    state.refuse_if_busy(name)
    await _off_loop(ladder_ops.expect_step, path, "record_ceiling")
    server = await _off_loop(rung_ops.load_server, path)
    if server is not None:
        async with open_target(server.handle.target, load_targets(state.config.targets)) as target:
            await rung_ops.stop_server(path, target)
    return await _off_loop(ladder_ops.ceiling_record, path)


@tool(READ_ONLY, "Parse a vLLM boot log")
async def parse_boot_log(text: Annotated[Text, Field(description="The full output of `vllm serve`")]) -> BootSignals:
    """What a vLLM boot log says: status (boot_ok, oom_*, crash_*), KV cache GiB and tokens, concurrency, memory, warnings."""
    return await _off_loop(vllm.parse_boot_log, text)


@tool(READ_ONLY, "Job status")
async def job_status(
    ctx: Context, job_id: JobIdArg,
    wait_s: Annotated[float, Field(ge=0, le=WAIT_MAX_S, description="Wait up to this many seconds for the job to finish")] = 0,
) -> JobView[RungOutcome]:
    """Where a job stands (waiting up to wait_s for it to finish), and its result once it succeeded."""
    return _view(await _state(ctx).jobs.wait(job_id, wait_s, _reporter(ctx)))


@tool(STOPS, "Cancel a job")
async def job_cancel(ctx: Context, job_id: JobIdArg) -> JobView[RungOutcome]:
    """Cancel a running job and stop the servers it started; a finished job is left as it is."""
    return _view(await _state(ctx).jobs.cancel(job_id))


@tool(READ_ONLY, "List jobs")
async def job_list(
    ctx: Context,
    state: Annotated[JobState | None, Field(description="Only jobs in this state")] = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 20,
) -> JobList:
    """The jobs of this workspace, newest first, from every server that ran them."""
    records = await _off_loop(_state(ctx).jobs.list, state=state, limit=limit)
    return JobList(jobs=[_view(r) for r in records])


# ---- resources: the ladders ----------------------------------------------------------------------


def list_ladders(config: ServerConfig, cache: LadderCache) -> list[LadderEntry]:
    """The ladder files of the workspace (outside .redline and the *.runs folders), sorted by path."""
    entries = []
    candidates = sorted(p for s in LADDER_SUFFIXES for p in config.workspace.rglob(f"*{s}"))
    for path in candidates:
        rel = relative_name(config.workspace, path)
        if rel.startswith(".") or any(part.endswith(".runs") for part in Path(rel).parts):
            continue
        try:
            status = cache.get(ladder_ops.ladder_status, path)
        except RedlineError:
            continue  # not a ladder (or a broken one: ladder_status on it says why)
        ceiling = status.ladder.ceiling
        entries.append(LadderEntry(ladder=rel, model=status.ladder.model.key, rungs=len(status.rows),
                                   next=status.next.route, ceiling_max_model_len=ceiling and ceiling.max_model_len))
        if len(entries) >= MAX_LISTED_LADDERS:
            break
    return entries


def _add_resources(server: MCPServer, config: ServerConfig, cache: LadderCache) -> None:
    @server.resource("redline://ladders", name="ladders", mime_type="application/json",
                     description="The ladder files in the workspace: model, rung count, route, ceiling")
    async def ladders() -> str:
        entries = await _off_loop(list_ladders, config, cache)
        return json.dumps([e.model_dump() for e in entries], indent=2)

    @server.resource("redline://ladders/{+name}", name="ladder", mime_type="application/yaml",
                     description="One ladder file as it is on disk (YAML); name is its path inside the workspace")
    async def ladder(name: str) -> str:
        try:
            path = ladder_path(config, name)
            return await _off_loop(path.read_text, encoding="utf-8")
        except RedlineError as exc:
            raise ResourceError(str(exc)) from exc
        except OSError as exc:
            raise ResourceError(f"ladder {name!r}: {exc.strerror or exc}; the redline://ladders resource lists them") from exc


# ---- the server ----------------------------------------------------------------------------------


def build_server(config: ServerConfig, *, on_closed: Callable[[], None] | None = None) -> MCPServer:
    """The MCPServer for one config: its tools, its ladder resources, and jobs that live as long as it runs.

    on_closed is called once the jobs are ended and their servers stopped, as the server shuts down.
    """
    cache = LadderCache()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[State]:
        try:
            async with running_jobs(config.state_dir / "jobs", functools.partial(stop_process, config)) as jobs:
                log.info("redline MCP server: workspace %s, targets %s", config.workspace, config.targets)
                yield State(config, jobs, cache)
        finally:
            if on_closed is not None:
                on_closed()

    server = MCPServer("redline", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)
    for fn, annotations, title in TOOLS:
        server.add_tool(fn, title=title, annotations=annotations, structured_output=True)
    _add_resources(server, config, cache)
    return server


# ---- HTTP: loopback by default, a bearer token for anything else --------------------------------


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str, env_name: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.env_name = env_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", [])).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": f"missing or wrong bearer token: send `Authorization: Bearer <the token in "
                                            f"${self.env_name} on the server>`"}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="redline"'),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, config: ServerConfig, host: str) -> ASGIApp:
    """The streamable-HTTP app at /mcp; refused on a non-loopback host unless a bearer token is set."""
    token = config.http.bearer_token()
    if token is None and not is_loopback(host):
        raise InputError(f"serving MCP on {host} (not loopback) needs a bearer token: set http.bearer_token_env "
                         "in the server config and export that variable, or serve on 127.0.0.1")
    app: ASGIApp = server.streamable_http_app(host=host)  # DNS-rebinding protection on loopback hosts
    if token is not None:
        app = BearerAuth(app, token, config.http.bearer_token_env or "")
    return app
