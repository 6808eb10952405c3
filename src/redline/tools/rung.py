"""Run rungs for real: boot what the ladder says next on a target, read the log, record it.

One rung is one clean boot: the server the ladder left up (for its smoke test) is
stopped, by its process group, before the next one starts. A server that booted
stays up for its smoke test; its handle is kept in `<ladder>.runs/server.json`, so a
later call (or a restarted MCP server) can still find and stop it.
"""

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from redline.engines.vllm import bench_argv, health_url, parse_boot_log, serve_argv
from redline.engines.vllm.bootlog import message
from redline.errors import CommandTimeout, InputError, LadderError, LogParseError, TargetPathError
from redline.ledger.ladder_file import load_ladder, runs_dir, set_host
from redline.models import BootSignals, BootStatus, ServeConfig
from redline.models.ladder import NextStep, Rung
from redline.targets import ProcessHandle, RunResult, Target
from redline.tools import ladder as ladder_tools

Progress = Callable[[float, str], Awaitable[None]]
BOOT_POLL_S = 10.0  # how often a waiting boot reports progress


class RungOutcome(BaseModel):
    """A rung as recorded, and what the ladder says to do next."""

    rung: Rung
    next: NextStep


class ServerRecord(BaseModel):
    """The server a ladder left running for its smoke test."""

    rung_index: int
    handle: ProcessHandle
    config: ServeConfig
    boot_log_bytes: int  # where the boot ended in the log: the smoke test's lines follow


async def _say(progress: Progress | None, fraction: float, text: str) -> None:
    if progress is not None:
        await progress(min(max(fraction, 0.0), 1.0), text)


def _server_file(ladder: Path) -> Path:
    return runs_dir(ladder) / "server.json"


def load_server(ladder: Path) -> ServerRecord | None:
    path = _server_file(ladder)
    try:
        return ServerRecord.model_validate_json(path.read_text())
    except FileNotFoundError:
        return None
    except (ValidationError, OSError) as exc:
        raise LadderError(f"{path} is unreadable ({exc}); stop the server it names by hand and delete it") from exc


def _save_server(ladder: Path, record: ServerRecord) -> None:
    path = _server_file(ladder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(record.model_dump_json(indent=2))
    tmp.replace(path)


async def stop_server(ladder: Path, target: Target) -> bool:
    """Stop the server this ladder left up, if any; True when there was one."""
    record = load_server(ladder)
    if record is None:
        return False
    if record.handle.target != target.name:
        raise LadderError(f"the server of rung {record.rung_index} runs on target {record.handle.target!r}, not {target.name!r}")
    await target.stop(record.handle)
    _server_file(ladder).unlink(missing_ok=True)
    return True


def _last_line(log_text: str) -> str:
    lines = [line for line in log_text.splitlines() if line.strip()]
    return message(lines[-1])[:200] if lines else "(the log is empty)"


def _signals(log_text: str, outcome_status: str, detail: str) -> BootSignals:
    """The log's own verdict, corrected by what the target saw (a deadline, an exit)."""
    try:
        signals = parse_boot_log(log_text)
    except LogParseError:
        signals = BootSignals(status=BootStatus.CRASH_UNKNOWN, reason=f"not a vLLM boot log: {_last_line(log_text)}")
    if outcome_status == "timeout":
        return signals.model_copy(update={"status": BootStatus.TIMEOUT_BOOT, "reason": detail + f"; last log line: {_last_line(log_text)}"})
    if outcome_status == "exited" and signals.status in (BootStatus.BOOT_OK, BootStatus.BOOT_INCOMPLETE):
        return signals.model_copy(update={"status": BootStatus.CRASH_UNKNOWN, "reason": detail + f"; last log line: {_last_line(log_text)}"})
    return signals


async def _boot(target: Target, config: ServeConfig, deadline_s: float, progress: Progress | None):
    argv = serve_argv(config, executable=target.engine_command)
    env = {**target.engine_env, **config.env}
    handle = await target.start(argv, env=env, cwd=None, log_path="boot.log")
    url, t0 = health_url(config), time.monotonic()
    try:
        while True:
            left = deadline_s - (time.monotonic() - t0)
            outcome = await target.wait_ready(handle, url, max(0.0, min(BOOT_POLL_S, left)))
            elapsed = time.monotonic() - t0
            if outcome.status != "timeout" or elapsed >= deadline_s:
                break
            tail = _last_line(await target.read_text(handle.log_path))
            await _say(progress, elapsed / deadline_s, f"booting for {elapsed:.0f}s: {tail}")
    except BaseException:
        await target.stop(handle)  # a cancelled or failed wait leaves nothing running
        raise
    if outcome.status != "ready":
        await target.stop(handle)
    return handle, outcome, time.monotonic() - t0


async def _check_model_path(model: str, target: Target) -> None:
    """A model given as a path must be there on the target (a hub id is the engine's to fetch)."""
    if model.startswith(("/", ".", "~")) and (await target.run(["test", "-e", model])).returncode != 0:
        raise InputError(f"model path {model} does not exist on target {target.name}: fix the ladder's model path "
                         "(model.path in the ladder file), or copy the model there")


async def rung_run(ladder: Path, target: Target, *, replay: int | None = None, progress: Progress | None = None) -> RungOutcome:
    """Boot the ladder's next rung (or replay a past one) on target and record what the log says."""
    step = ladder_tools.expect_step(ladder, "run_rung", replay)
    await _check_model_path(step.rung.model, target)
    state = load_ladder(ladder)
    if state.gpu is None:
        set_host(ladder, await target.host_info())
    if await stop_server(ladder, target):
        await _say(progress, 0.0, "stopped the previous rung's server")
    config = step.rung
    await _say(progress, 0.0, f"booting max_model_len={config.max_model_len} max_num_batched_tokens={config.max_num_batched_tokens}")
    started = datetime.now(UTC)
    handle, outcome, boot_s = await _boot(target, config, state.boot_deadline_s, progress)
    log_text = await target.read_text(handle.log_path)
    detail = {"timeout": f"no answer from {health_url(config)} within {state.boot_deadline_s:.0f}s",
              "exited": f"the server exited with code {outcome.exit_code} before it was ready"}.get(outcome.status, "")
    try:
        rung = ladder_tools.rung_record(
            ladder, log_text, signals=_signals(log_text, outcome.status, detail), serve=config,
            log_name=f"{target.name}:{handle.log_path}", started_at=started, ended_at=datetime.now(UTC),
            boot_s=round(boot_s, 1), replay_of=replay,
        )
        if outcome.status == "ready":
            _save_server(ladder, ServerRecord(rung_index=rung.index, handle=handle, config=config,
                                              boot_log_bytes=len(log_text.encode())))
    except BaseException:
        await target.stop(handle)  # a server the ladder cannot account for is not left running
        raise
    await _say(progress, 1.0, f"rung {rung.index}: {rung.status}")
    return RungOutcome(rung=rung, next=ladder_tools.ladder_next(ladder))


def _error_lines(log_tail: str) -> list[str]:
    keep = ("ERROR", "Error", "Traceback", "out of memory", "Killed")
    return [message(line)[:300] for line in log_tail.splitlines() if any(k in line for k in keep)][-20:]


async def smoke_test(ladder: Path, target: Target, *, progress: Progress | None = None) -> RungOutcome:
    """Load the running rung with the engine's own bench client at near its max length."""
    step = ladder_tools.expect_step(ladder, "smoke_test")
    state = load_ladder(ladder)
    record = load_server(ladder)
    index = step.rung_index
    if record is None or record.rung_index != index or not await target.is_alive(record.handle):
        raise LadderError(f"the server of rung {index} is not running any more: call rung_run with replay={index} to boot it again for its smoke test")
    workload = step.smoke.model_dump(exclude={"dataset"})
    result_name = f"smoke-rung-{index:03d}.json"
    argv = bench_argv(record.config, **workload, result_dir=record.handle.run_dir, result_filename=result_name,
                      executable=target.engine_command)
    await _say(progress, 0.1, f"smoke test: {workload['num_prompts']} prompts of {workload['input_len']} tokens at concurrency {workload['concurrency']}")
    try:
        run = await target.run(argv, env=target.engine_env, timeout_s=state.smoke_deadline_s)
    except CommandTimeout:
        run = RunResult(returncode=124, stdout="", stderr=f"the bench did not finish within {state.smoke_deadline_s:.0f}s")
    healthy = (await target.wait_ready(record.handle, health_url(record.config), 10.0)).status == "ready"
    log_tail = (await target.read_text(record.handle.log_path)).encode()[record.boot_log_bytes:].decode(errors="replace")
    try:
        bench_text = await target.read_text(f"{record.handle.run_dir}/{result_name}")
    except TargetPathError:  # no result file: the bench itself failed; its stderr says why
        bench_text = None
    lines = _error_lines(log_tail) + ([] if run.returncode == 0 else [f"bench exited {run.returncode}: {_last_line(run.stderr or run.stdout)}"])
    rung = ladder_tools.smoke_record(ladder, bench_text, workload=workload, server_healthy_after=healthy, log_lines=lines)
    await _say(progress, 1.0, f"smoke test of rung {rung.index}: {'passed' if rung.smoke_test.passed else 'failed'}")
    return RungOutcome(rung=rung, next=ladder_tools.ladder_next(ladder))


class ClimbReport(BaseModel):
    """Every step a climb took and where it stopped."""

    steps: list[str]
    final: NextStep


async def climb(ladder: Path, target: Target, *, max_steps: int = 20, progress: Progress | None = None) -> ClimbReport:
    """Follow the ladder's routes until its ceiling is recorded or a failure needs a person."""
    steps: list[str] = []
    for _ in range(max_steps):
        step = ladder_tools.ladder_next(ladder)
        if step.route == "run_rung":
            outcome = await rung_run(ladder, target, progress=progress)
            steps.append(f"rung {outcome.rung.index}: max_model_len {outcome.rung.serve.max_model_len}, "
                         f"batched {outcome.rung.serve.max_num_batched_tokens}: {outcome.rung.status} ({outcome.rung.reason})")
        elif step.route == "smoke_test":
            outcome = await smoke_test(ladder, target, progress=progress)
            steps.append(f"smoke test of rung {outcome.rung.index}: {'passed' if outcome.rung.smoke_test.passed else 'failed'}")
        elif step.route == "record_ceiling":
            await stop_server(ladder, target)
            ceiling = ladder_tools.ceiling_record(ladder)
            steps.append(f"ceiling: max_model_len {ceiling.max_model_len}, batched {ceiling.max_num_batched_tokens}")
        else:
            await stop_server(ladder, target)
            return ClimbReport(steps=steps, final=step)
    await stop_server(ladder, target)
    return ClimbReport(steps=steps, final=ladder_tools.ladder_next(ladder))
