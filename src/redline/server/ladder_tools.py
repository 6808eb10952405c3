"""The ladder tools: each one a request checked against the workspace, then one call into redline.ops.

Their inputs are the request models' fields (see toolkit.expand), beside `ladder` (a file in the
workspace) and, for the tools that run as jobs, `wait_s`.
"""

from pathlib import Path

from mcp.server.mcpserver import Context

from redline.engines import get_engine
from redline.errors import InputError, LadderError
from redline.ledger import read_ladder
from redline.models import BootSignals
from redline.models.ladder import Ceiling, Ladder, LadderAdopted, LadderStatus, NextStep
from redline.models.shape import ModelShape
from redline.ops.evidence.known_good_apply import registry_path
from redline.ops.ladder import adopt as adopt_ops
from redline.ops.ladder import plan as ladder_ops
from redline.ops.ladder import record as ladder_record
from redline.ops.ladder import rung as rung_ops
from redline.ops.ladder.rung import RungOutcome
from redline.ops.predict.model_config import given_config
from redline.ops.requests import (
    CeilingRecordRequest,
    LadderAdoptRequest,
    LadderInitRequest,
    LadderNextRequest,
    LadderStatusRequest,
    ParseBootLogRequest,
    RungRecordRequest,
    RungRunRequest,
    SmokeTestRequest,
)
from redline.ops.session import Progress
from redline.server.jobs import WAIT_DEFAULT_S, JobView
from redline.server.launch import launch
from redline.server.toolkit import (
    APPEND,
    BOOTS,
    READ_ONLY,
    STOPS,
    WRITE_ONCE,
    LadderArg,
    State,
    WaitArg,
    off_loop,
    state_of,
    tool,
)
from redline.targets import Target


@tool(WRITE_ONCE, "Start a ladder", LadderInitRequest)
async def _ladder_init(ctx: Context, ladder: LadderArg, request: LadderInitRequest) -> Ladder:
    """Create a new ladder file for one model on one GPU, from a boot known to work (refused if the file exists)."""
    state = state_of(ctx)
    path, _ = state.ladder(ladder)
    await off_loop(state.check_derived, path)
    given = await off_loop(state.read_model_config, request.model_config_file) if request.model_config_file else None
    return await off_loop(
        ladder_ops.ladder_init,
        path,
        request,
        widening=state.config.widening(request.engine),
        known_good=registry_path(state.config.workspace),
        config_text=given,
    )


@tool(READ_ONLY, "Ladder status", LadderStatusRequest)
async def _ladder_status(ctx: Context, ladder: LadderArg, request: LadderStatusRequest) -> LadderStatus:
    """Every rung of a ladder, one row each, and where the climb stands (`next.route` says what to call next)."""
    state = state_of(ctx)
    path, name = state.ladder(ladder)
    status: LadderStatus = await off_loop(state.cache.get, ladder_ops.ladder_status, path)
    return status.model_copy(update={"path": name})


@tool(READ_ONLY, "Next rung", LadderNextRequest)
async def _ladder_next_rung(ctx: Context, ladder: LadderArg, request: LadderNextRequest) -> NextStep:
    """The ladder's next step and why: the serve config of the next rung, or smoke_test, record_ceiling, diagnose
    or done."""
    state = state_of(ctx)
    path, _ = state.ladder(ladder)
    return await off_loop(state.cache.get, ladder_ops.ladder_next, path, request.replay)


@tool(BOOTS, "Boot the next rung", RungRunRequest)
async def _rung_run(
    ctx: Context,
    ladder: LadderArg,
    request: RungRunRequest,
    wait_s: WaitArg = WAIT_DEFAULT_S,
) -> JobView[RungOutcome]:
    """Boot the ladder's next rung (or replay rung N) on a target, cleanly, read its log and append the rung.

    Runs as a job: stops the server the ladder left up, boots, waits for health. Returns the
    recorded rung and the next step if it ends within wait_s, else the job id for job_status.
    """
    state = state_of(ctx)
    path, name = state.ladder(ladder)
    await off_loop(state.refuse_if_busy, name)  # reads every job file: off the loop
    read = await off_loop(read_ladder, path)
    step = await off_loop(ladder_ops.expect_step, path, "run_rung", request.replay, read)
    widening = state.config.widening(read.engine)
    ack = request.i_understand_this_submits_jobs
    await off_loop(state.admit, request.target, read.engine, step, widening, ack)  # refused now, before any job
    await off_loop(state.check_derived, path, len(read.rungs) + 1)

    async def run(t: Target, progress: Progress) -> RungOutcome:
        return await rung_ops.rung_run(
            path,
            t,
            replay=request.replay,
            progress=progress,
            step=step,
            widening=widening,
            i_understand_this_submits_jobs=ack,
            workspace=state.config.workspace,
        )

    on, args = request.target, {"replay": request.replay}
    return await launch(
        ctx, JobView[RungOutcome], RungOutcome, "rung_run", run, target=on, args=args, wait_s=wait_s, ladder=name
    )


@tool(BOOTS, "Smoke-test the running rung", SmokeTestRequest)
async def _smoke_test(
    ctx: Context,
    ladder: LadderArg,
    request: SmokeTestRequest,
    wait_s: WaitArg = WAIT_DEFAULT_S,
) -> JobView[RungOutcome]:
    """Load the rung that just booted with near-max-length requests (the engine's own bench client) and record
    pass or fail.

    Runs as a job, like rung_run.
    """
    state = state_of(ctx)
    path, name = state.ladder(ladder)
    await off_loop(state.refuse_if_busy, name)  # reads every job file: off the loop
    await off_loop(state.check_derived, path)
    step = await off_loop(ladder_ops.expect_step, path, "smoke_test")
    on = request.target or await _recorded_target(path, step)
    await off_loop(state.check_target, on)  # reads the targets file

    async def run(t: Target, progress: Progress) -> RungOutcome:
        return await rung_ops.smoke_test(path, t, progress=progress, step=step)

    return await launch(
        ctx, JobView[RungOutcome], RungOutcome, "smoke_test", run, target=on, args={}, wait_s=wait_s, ladder=name
    )


async def _recorded_target(path: Path, step: NextStep) -> str:
    """The target the ladder's running server was booted on."""
    server = await off_loop(rung_ops.ladder_server, path)
    if server is None:
        raise LadderError(
            f"no server of this ladder is running: call rung_run with replay={step.rung_index} to boot it again"
        )
    return server.handle.target


@tool(APPEND, "Record a boot run by hand", RungRecordRequest)
async def _rung_record(ctx: Context, ladder: LadderArg, request: RungRecordRequest) -> RungOutcome:
    """Record a boot that a person ran by hand, and optionally its smoke-test result, in the ladder.

    Give the boot log as text or as a workspace file. A smoke result alone fills in the last
    rung's smoke test. Returns the rung as recorded and the ladder's next step.
    """
    state = state_of(ctx)
    path, name = state.ladder(ladder)
    await off_loop(state.refuse_if_busy, name)  # reads every job file: off the loop
    await off_loop(state.check_derived, path)
    log, bench = await _texts(state, request)
    recorded = None
    if log:  # a long text is read in a worker process (offload.PROCESS_OVER): the other calls go on meanwhile
        named = request.log_file or "pasted by the caller"
        shape = await off_loop(_given_shape, state, request.model_config_file)
        recorded = await off_loop(
            ladder_record.record_boot,
            path,
            log,
            log_name=named,
            shape=shape,
            workspace=state.config.workspace,
            size=len(log),
        )
    if bench:
        recorded = await off_loop(ladder_record.record_smoke, path, bench, size=len(bench))
    assert recorded is not None  # _texts refuses a request with neither
    rung, updated = recorded
    return RungOutcome(rung=rung, next=await off_loop(ladder_ops.next_of, path, updated))


def _given_shape(state: State, name: str | None) -> ModelShape | None:
    """The shape of the config.json a request gives as model_config_file (a workspace file), if it gives one."""
    return given_config(state.read_model_config(name))[0] if name else None


async def _texts(state: State, request: RungRecordRequest) -> tuple[str, str]:
    """The boot log and the bench result a rung_record request gives, each as text or as a workspace file."""
    r = request
    if r.log_text and r.log_file or r.bench_json_text and r.bench_file:
        raise InputError(
            "give the boot log either as log_text or as log_file (and the bench either as text or file), not both"
        )
    log = await off_loop(state.read_text, r.log_file, "log_file") if r.log_file else r.log_text
    bench = await off_loop(state.read_text, r.bench_file, "bench_file") if r.bench_file else r.bench_json_text
    if not log and not bench:
        raise InputError(
            "nothing to record: give the boot log (log_text or log_file), a smoke result "
            "(bench_json_text or bench_file), or both"
        )
    return log, bench


@tool(STOPS, "Record the ceiling", CeilingRecordRequest)
async def _ceiling_record(ctx: Context, ladder: LadderArg, request: CeilingRecordRequest) -> Ceiling:
    """Record the ceiling the climb found (only when the next step is record_ceiling), and stop the server the
    ladder left up."""
    state = state_of(ctx)
    path, name = state.ladder(ladder)
    await off_loop(state.refuse_if_busy, name)  # reads every job file: off the loop
    await off_loop(state.check_derived, path)
    return await rung_ops.stop_and_record_ceiling(path, state.config.open_target)


@tool(WRITE_ONCE, "Adopt a ladder climbed elsewhere", LadderAdoptRequest)
async def _ladder_adopt(ctx: Context, request: LadderAdoptRequest) -> LadderAdopted:
    """Copy a ladder climbed elsewhere into the workspace as ladders/<name>.yml, with the rung files it names (boot
    logs, smoke results) re-based under the new name and its origin recorded (adopted_from: the file, when, its
    sha256); validated as a ladder, read as untrusted input, refused if the destination exists. The source is a path
    inside the workspace, or an absolute path under a folder the server config's adopt_from names. Then use it as
    any ladder: its ceiling as a campaign's base.from_ladder, or carry on its climb."""
    state = state_of(ctx)
    source = state.adopt_source(request.source)
    return await off_loop(adopt_ops.ladder_adopt, source, state.config.workspace, request)


@tool(READ_ONLY, "Parse a boot log", ParseBootLogRequest)
async def _parse_boot_log(request: ParseBootLogRequest) -> BootSignals:
    """What an engine's boot log says: status (boot_ok, oom_*, crash_*), KV cache GiB and tokens, concurrency,
    memory, warnings."""
    text = request.text  # up to MAX_TEXT; over offload.PROCESS_OVER it is parsed in a worker process
    return await off_loop(get_engine(request.engine).parse_boot_log, text, size=len(text))
