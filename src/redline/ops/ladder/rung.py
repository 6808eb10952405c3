"""Run rungs for real: boot what the ladder says next on a target, read the log, record it.

One rung is one clean boot: the server the ladder left up (for its smoke test) is
stopped, by its handle, before the next one starts. A server that booted stays up
for its smoke test; its record is kept in `<ladder>.runs/server.json`, so a later
call (or a restarted MCP server) can still find and stop it.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from redline.engines import get_engine
from redline.errors import LadderError
from redline.ledger import check_derived, read_ladder, server_file, set_deployment_compile_cache, set_host
from redline.ledger.server_record import ServerRecord, check_reachable, load_server, save_server
from redline.models import ServeConfig, Widening
from redline.models.ladder import Ceiling, Ladder, NextStep, Rung, SmokeWorkload
from redline.models.shape import ModelShape
from redline.offload import off_loop
from redline.ops.evidence.context import model_files
from redline.ops.ladder import ceiling as ladder_ceiling
from redline.ops.ladder import plan as ladder_tools
from redline.ops.ladder import record as ladder_record
from redline.ops.measured_boot import run_benches, server_record, stop_left_servers
from redline.ops.predict.recorded import record_written
from redline.ops.request_base import require_ack
from redline.ops.session import Boot, Progress, ServeSession, say
from redline.policy.workload import Bench
from redline.targets import ServerHandle, Target
from redline.targets.unit import boot_unit


class RungOutcome(BaseModel):
    """A rung as recorded, and what the ladder says to do next."""

    rung: Rung
    next: NextStep


def ladder_server(ladder: Path) -> ServerRecord | None:
    """The server this ladder left running for its smoke test, if any."""
    return load_server(server_file(ladder))


async def stop_ladder_server(ladder: Path, target: Target) -> bool:
    """Stop the server this ladder left up, if any; True when there was one."""
    return await stop_left_servers([server_file(ladder)], target, "rung") > 0


async def stop_shielded(target: Target, handle: ServerHandle) -> None:
    """Stop a server even while the caller is being cancelled: a cancel must not leave it running."""
    with anyio.CancelScope(shield=True):
        await target.stop(handle)


def _session(
    ladder: Ladder,
    target: Target,
    progress: Progress | None,
    widening: Widening | None = None,
) -> ServeSession:
    session = ServeSession(target, get_engine(ladder.engine), progress, widening)
    # a boot's progress advances against the last rung's boot time (the deadline where no rung booted yet)
    session.expected_boot_s = next((r.boot_s for r in reversed(ladder.rungs) if r.status.booted and r.boot_s), None)
    return session


async def rung_run(
    ladder: Path,
    target: Target,
    *,
    replay: int | None = None,
    progress: Progress | None = None,
    step: NextStep | None = None,
    widening: Widening | None = None,
    i_understand_this_submits_jobs: bool = False,
    workspace: Path | None = None,
) -> RungOutcome:
    """Boot the ladder's next rung (or replay a past one) on target and record what the log says.

    `step` is the next step a caller already checked (ladder_tools.expect_step); else it is read here.
    `widening` is what the server config allows beyond the engine's allowlist; the rung records what it used.
    `workspace`: the ladder's, whose recorded boots the rung joins (and a predict ladder learns from)."""
    require_ack(i_understand_this_submits_jobs, "rung_run", cluster=target)
    state = await off_loop(read_ladder, ladder)
    if step is None:
        step = await off_loop(ladder_tools.expect_step, ladder, "run_rung", replay, state)
    session = _session(state, target, progress, widening)
    target.experiment = ladder.stem  # a target that labels its servers (kubernetes) files them under the ladder
    config = step.rung
    assert config is not None  # a run_rung step always carries its serve config
    await _check_rung(ladder, state, session, config)
    await _fill_from_target(ladder, state, target)
    if await stop_ladder_server(ladder, target):
        await say(progress, 0.0, "stopped the previous rung's server")
    await say(
        progress,
        0.0,
        f"booting max_model_len={config.max_model_len} max_num_batched_tokens={config.max_num_batched_tokens}",
    )
    shape = None if state.model.shape else (await model_files(target, config.model)).shape[0]  # read once, there
    boot_unit(f"rung-{len(state.rungs) + 1}")  # a target that names its jobs (slurm) says which rung each is
    boot = await session.boot(config, state.boot_deadline_s)
    rung, updated = await _record_rung(ladder, session, boot, config, replay, shape, workspace)
    updated = await _learn_compile_cache(ladder, updated, target, workspace)
    await say(progress, 1.0, f"rung {rung.index}: {rung.status}")
    return RungOutcome(rung=rung, next=await off_loop(ladder_tools.next_of, ladder, updated))


async def _fill_from_target(ladder: Path, state: Ladder, target: Target) -> None:
    """What the ladder learns from its target once, before its first boot: its GPU."""
    if state.gpu is None:
        await off_loop(set_host, ladder, await target.host_info())


async def _learn_compile_cache(ladder: Path, state: Ladder, target: Target, workspace: Path | None) -> Ladder:
    """Whether a deployment on the target keeps its compile cache, learnt with the first rung recorded (a boot the
    ladder refuses writes nothing); the ladder as written kept in the workspace's recorded boots, so no plan reads
    it again."""
    if state.deployment_compile_cache is not None:
        return state
    learned = await off_loop(set_deployment_compile_cache, ladder, target.compile_cache_persists)
    if workspace is not None:
        record_written(workspace, ladder, learned)
    return learned


async def _check_rung(ladder: Path, state: Ladder, session: ServeSession, config: ServeConfig) -> None:
    """Every refusal a rung can meet before anything is stopped or started: a knob the engine refuses, a derived
    folder that leads out of the ladder's, a model path the target does not have."""
    session.admit(config)
    await off_loop(check_derived, ladder, len(state.rungs) + 1)
    await session.check_model_path(config.model, "fix the ladder's model path (model.path in the ladder file)")


async def _record_rung(
    ladder: Path,
    session: ServeSession,
    boot: Boot,
    config: ServeConfig,
    replay: int | None,
    shape: ModelShape | None,
    workspace: Path | None,
) -> tuple[Rung, Ladder]:
    """Record the boot as a rung, and a server that is up as the ladder's; a server the ladder cannot account
    for (the record failed, or the call was cancelled) is stopped, not left running."""
    try:
        rung, updated = await off_loop(
            ladder_record.record_boot,
            ladder,
            boot.log_text,
            signals=boot.signals,
            serve=config,
            log_name=f"{session.target.name}:{boot.handle.log_path}",
            started_at=boot.started_at,
            ended_at=boot.ended_at,
            boot_s=round(boot.boot_s, 1),
            replay_of=replay,
            widened=boot.widened,
            shape=shape,
            workspace=workspace,
        )
        if boot.ready:
            record = server_record(rung.index, session, config, boot.handle, len(boot.log_text.encode()))
            await off_loop(save_server, server_file(ladder), record)
    except BaseException:
        await stop_shielded(session.target, boot.handle)
        raise
    return rung, updated


async def smoke_test(
    ladder: Path,
    target: Target,
    *,
    progress: Progress | None = None,
    step: NextStep | None = None,
) -> RungOutcome:
    """Load the running rung with the engine's own bench client at near its max length."""
    state = await off_loop(read_ladder, ladder)
    if step is None:
        step = await off_loop(ladder_tools.expect_step, ladder, "smoke_test", None, state)
    index = step.rung_index
    record = await _running_server(ladder, target, index)
    assert step.smoke is not None  # a smoke_test step always carries its workload
    workload = step.smoke
    smoke = _smoke_step(index, workload)
    session = _session(state, target, progress)
    deadline_s, since = state.smoke_deadline_s, record.boot_log_bytes  # the bench's lines follow the boot's
    [result] = await run_benches(session, record.handle, record.config, [smoke], deadline_s=deadline_s, since=since)
    bench = result.run
    rung, updated = await off_loop(
        ladder_record.record_smoke,
        ladder,
        bench.result_text,
        workload=workload,
        server_healthy_after=bench.healthy_after,
        log_lines=bench.log_lines,
        size=len(bench.result_text or ""),
    )
    await say(progress, 1.0, f"smoke test of rung {rung.index}: {'passed' if rung.smoke_test.passed else 'failed'}")
    return RungOutcome(rung=rung, next=await off_loop(ladder_tools.next_of, ladder, updated))


async def _running_server(ladder: Path, target: Target, index: int | None) -> ServerRecord:
    """The server the ladder left up for rung `index`, refused when it is not running any more."""
    record = await off_loop(ladder_server, ladder)
    if record is not None:
        check_reachable(record, target, "rung", server_file(ladder))
    if record is None or record.rung_index != index or not await target.is_alive(record.handle):
        raise LadderError(
            f"the server of rung {index} is not running any more: call rung_run with replay={index} "
            "to boot it again for its smoke test"
        )
    return record


def _smoke_step(index: int | None, workload: SmokeWorkload) -> Bench:
    """The smoke test as a bench step: the rung's workload, its result file named by the rung."""
    label = (
        f"smoke test: {workload.num_prompts} prompts of {workload.input_len} tokens "
        f"at concurrency {workload.concurrency}"
    )
    return Bench(f"smoke-rung-{index:03d}.json", workload, label, ranked=False)


async def stop_and_record_ceiling(ladder: Path, open_target: Callable[[str], Target]) -> Ceiling:
    """Stop the server the ladder left up (through the target its record names), then record the ceiling."""
    await off_loop(ladder_tools.expect_step, ladder, "record_ceiling")
    record = await off_loop(ladder_server, ladder)
    if record is not None:
        async with await off_loop(open_target, record.handle.target) as target:
            await stop_ladder_server(ladder, target)
    return await off_loop(ladder_ceiling.ceiling_record, ladder)


class ClimbReport(BaseModel):
    """Every step a climb took and where it stopped."""

    steps: list[str]
    final: NextStep


def _rung_line(outcome: RungOutcome) -> str:
    rung = outcome.rung
    return (
        f"rung {rung.index}: max_model_len {rung.serve.max_model_len}, batched {rung.serve.max_num_batched_tokens}: "
        f"{rung.status} ({rung.reason})"
    )


async def climb(
    ladder: Path,
    target: Target,
    *,
    max_steps: int = 20,
    progress: Progress | None = None,
    widening: Widening | None = None,
    i_understand_this_submits_jobs: bool = False,
    workspace: Path | None = None,
) -> ClimbReport:
    """Follow the ladder's routes until its ceiling is recorded or a failure needs a person."""
    require_ack(i_understand_this_submits_jobs, "climb", cluster=target)
    steps: list[str] = []
    step = await off_loop(ladder_tools.ladder_next, ladder)
    boots: dict[str, Any] = {"progress": progress, "widening": widening, "workspace": workspace}
    for _ in range(max_steps):
        if step.route == "run_rung":
            outcome = await rung_run(ladder, target, step=step, i_understand_this_submits_jobs=True, **boots)
            steps.append(_rung_line(outcome))
        elif step.route == "smoke_test":
            outcome = await smoke_test(ladder, target, progress=progress, step=step)
            steps.append(
                f"smoke test of rung {outcome.rung.index}: {'passed' if outcome.rung.smoke_test.passed else 'failed'}"
            )
        elif step.route == "record_ceiling":
            await stop_ladder_server(ladder, target)
            ceiling = await off_loop(ladder_ceiling.ceiling_record, ladder)
            steps.append(f"ceiling: max_model_len {ceiling.max_model_len}, batched {ceiling.max_num_batched_tokens}")
            step = await off_loop(ladder_tools.ladder_next, ladder)
            continue
        else:
            await stop_ladder_server(ladder, target)
            return ClimbReport(steps=steps, final=step)
        step = outcome.next
    await stop_ladder_server(ladder, target)
    return ClimbReport(steps=steps, final=await off_loop(ladder_tools.ladder_next, ladder))
