"""Recording what a ladder saw: a boot log as a rung, a smoke test's result on the last rung, and the ceiling.

Each checks what it is given against the ladder and raises a RedlineError whose message says what to do;
a refused input changes nothing on disk.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.errors import InputError, LadderError
from redline.ledger import Change, append_rung, read_ladder, rung_file, set_smoke_test, update_ladder
from redline.models import BenchResult, BootSignals, ServeConfig
from redline.models.context import ContextDescriptor, Hardware, Workload
from redline.models.ladder import Ladder, NextStep, Rung, SmokeTest, SmokeWorkload
from redline.models.shape import ModelShape
from redline.ops.evidence.context import descriptor, local_model_files
from redline.ops.ladder.joint import ladder_source, memory_observations, plan_joint, wants_plan
from redline.ops.predict.predict import Boots
from redline.ops.predict.recorded import record_written
from redline.policy import Placement, place_boot
from redline.policy.drift import kv_drift

# A smoke test confirms a ceiling only if its requests come this close to max_model_len.
NEAR_CEILING = 0.9
UTILIZATION_TOLERANCE = 0.005
GPU_MEMORY_TOLERANCE = 0.05

_STEP_NAMES = {"run_rung": "a boot", "smoke_test": "a smoke test"}


def not_now(step: NextStep, route: str) -> LadderError:
    """The error for asking `route` of a ladder whose next step is another."""
    if route == "record_ceiling" and step.route == "done":
        return LadderError(f"nothing to record: the climb is done ({step.reason})")
    if route == "record_ceiling":
        return LadderError(f"the climb is not over: the next step is {step.route} ({step.reason})")
    return LadderError(f"the ladder's next step is {step.route}, not {_STEP_NAMES[route]}: {step.reason}")


# -- recording a boot ------------------------------------------------------------------------------


def _check_log(
    ladder: Ladder, engine: Engine, signals: BootSignals, served: str | None, booted: tuple[int | None, int | None]
) -> None:
    """Refuse a log from another model, engine, engine version, utilization or GPU."""
    if signals.engine != ladder.engine:
        raise LadderError(
            f"the log is from {signals.engine}, but this ladder climbs with {ladder.engine}: "
            "record it in a ladder of that engine"
        )
    if served != ladder.model.path:
        said = f"served {served!r}" if served else "does not say which model it served"
        raise LadderError(
            f"the log {said}, but this ladder climbs {ladder.model.key} at {ladder.model.path!r}: "
            "record it in that model's ladder"
        )
    if ladder.engine_version and signals.engine_version and signals.engine_version != ladder.engine_version:
        raise LadderError(
            f"the log is {engine.title} {signals.engine_version}, but this ladder is {engine.title} "
            f"{ladder.engine_version}: one ladder is one engine version; start a new ladder for it"
        )
    _check_memory(ladder, signals)
    if None in booted:
        raise LadderError(
            "the log does not say its max_model_len and max_num_batched_tokens: "
            "boot with both flags given and pass the full output of the engine's serve command"
        )


def _check_memory(ladder: Ladder, signals: BootSignals) -> None:
    """The log booted at this ladder's gpu_memory_utilization, on a GPU of its profile's memory."""
    m, wanted = signals.memory, ladder.fixed.gpu_memory_utilization
    if (
        m.requested_gib
        and m.device_total_gib
        and abs(m.requested_gib / m.device_total_gib - wanted) > UTILIZATION_TOLERANCE
    ):
        raise LadderError(
            f"the log booted at gpu_memory_utilization {m.requested_gib / m.device_total_gib:.2f}, "
            f"but this ladder holds it at {wanted}: boot again with --gpu-memory-utilization {wanted}"
        )
    gpu = ladder.gpu and ladder.gpu.memory_gib
    if gpu and m.device_total_gib and abs(m.device_total_gib - gpu) > GPU_MEMORY_TOLERANCE * gpu:
        raise LadderError(
            f"the log's GPU has {m.device_total_gib} GiB, but this ladder's has {gpu} GiB: "
            "record it in that GPU profile's ladder"
        )


def _place(ladder: Ladder, booted: tuple[int | None, int | None], replay_of: int | None) -> Placement:
    if replay_of is None:
        return place_boot(ladder, *booted)
    if not 1 <= replay_of <= len(ladder.rungs):
        raise LadderError(f"there is no rung {replay_of} to replay: the ladder has rungs 1 to {len(ladder.rungs)}")
    original = ladder.rungs[replay_of - 1]
    if original.config != booted:
        raise LadderError(
            f"rung {replay_of} ran max_model_len {original.config[0]:,}, max_num_batched_tokens "
            f"{original.config[1]:,}, but this boot ran {booted[0]}, {booted[1]}: a replay is the exact config"
        )
    return Placement(original.serve, original.climbs, replay_of)


def record_boot(
    path: str | Path,
    log_text: str,
    *,
    log_name: str | None = None,
    started_at: datetime | None = None,
    ended_at: datetime | None = None,
    boot_s: float | None = None,
    simulated: bool = False,
    signals: BootSignals | None = None,
    serve: ServeConfig | None = None,
    replay_of: int | None = None,
    widened: Sequence[str] = (),
    shape: ModelShape | None = None,
    workspace: Path | None = None,
) -> tuple[Rung, Ladder]:
    """Append the rung an observed boot log shows (the one the ladder expects next, or a replay of a past one);
    the rung and the ladder as written. A runner that booted the config itself passes `serve` (matched instead of
    the log's own figures), `signals` (the log's, corrected by what it saw, such as a deadline), `replay_of`, and
    the model's `shape` as read on the target (kept once). `workspace`: the ladder's (its recorded boots calibrate
    the prediction; the rung joins them). A rung booted from a predicted step keeps the prediction and its drift."""
    path = Path(path)
    seen = _read_log(path, log_text, signals, serve, boot_s, started_at, ended_at)
    before = _with_shape(read_ladder(path), shape)
    boots = memory_observations(workspace, before) if wants_plan(before) else Boots([])  # read before the lock

    def change(ladder: Ladder) -> Change[tuple[Rung, Ladder]]:
        place = _checked_place(ladder, seen, serve, replay_of)
        index = len(ladder.rungs) + 1
        log_file = rung_file(path, index, "boot.log")
        rung = seen.rung(index, place, log_file, simulated, log_name, widened)
        if ladder.engine_version is None and seen.signals.engine_version:
            ladder = ladder.model_copy(update={"engine_version": seen.signals.engine_version})  # the first boot says it
        updated = append_rung(_with_shape(ladder, shape), rung)
        if plan := plan_joint(updated, boots, ladder_source(path, workspace)):  # the floor booted: the whole ceiling
            updated = updated.model_copy(update={"joint": plan})
        return Change(updated, (rung, updated), {log_file: log_text})

    return _joined(workspace, path, update_ladder(path, change))


def _joined(workspace: Path | None, path: Path, recorded: tuple[Rung, Ladder]) -> tuple[Rung, Ladder]:
    """The rung recorded, and the ladder as written joined to the workspace's recorded boots."""
    if workspace is not None:
        record_written(workspace, path, recorded[1])
    return recorded


def _checked_place(ladder: Ladder, seen: "_Seen", serve: ServeConfig | None, replay_of: int | None) -> Placement:
    """Where the boot goes, once its log is this ladder's and a runner's config is the rung's in every knob."""
    _check_log(ladder, get_engine(ladder.engine), seen.signals, seen.served, seen.booted)
    place = _place(ladder, seen.booted, replay_of)
    if serve is not None and serve != place.serve:
        raise LadderError(
            "the config booted differs from the rung the ladder expects in a fixed knob: "
            "boot what ladder_next_rung says"
        )
    return place


def _with_shape(ladder: Ladder, shape: ModelShape | None) -> Ladder:
    """The model's shape, as read on the target at the first boot, kept once."""
    if shape is None or ladder.model.shape is not None:
        return ladder
    return ladder.model_copy(update={"model": ladder.model.model_copy(update={"shape": shape})})


@dataclass(frozen=True)
class _Seen:
    """One boot as its log and its runner saw it: the log's signals, the model it served, the
    (max_model_len, max_num_batched_tokens) it booted, its seconds and when it ran."""

    signals: BootSignals
    served: str | None
    booted: tuple[int | None, int | None]
    boot_s: float | None
    started_at: datetime | None
    ended_at: datetime | None

    def rung(
        self, index: int, place: Placement, log_file: str, simulated: bool, log_name: str | None, widened: Sequence[str]
    ) -> Rung:
        """The rung this boot is, at its place in the ladder."""
        return Rung(
            index=index,
            climbs=place.climbs,
            replay_of=place.replay_of,
            simulated=simulated,
            status=self.signals.status,
            reason=self.signals.reason,
            serve=place.serve,
            signals=self.signals,
            started_at=self.started_at,
            ended_at=self.ended_at,
            boot_s=self.boot_s,
            log_file=log_file,
            log_source=log_name,
            widened=list(widened),
            predicted=place.predicted,
            drift=kv_drift(place.predicted, self.signals),
        )


def _read_log(
    path: Path,
    log_text: str,
    signals: BootSignals | None,
    serve: ServeConfig | None,
    boot_s: float | None,
    started_at: datetime | None,
    ended_at: datetime | None,
) -> _Seen:
    """The boot as seen: what the runner passed, and from the log (by the ladder's engine) what it did not."""
    engine = get_engine(read_ladder(path).engine) if signals is None or serve is None or boot_s is None else None
    if signals is None:
        signals = engine.parse_boot_log(log_text)  # type: ignore[union-attr]
    served = serve.model if serve else engine.served_model(log_text)  # type: ignore[union-attr]
    said = serve or signals
    if boot_s is None and started_at and ended_at:
        boot_s = (ended_at - started_at).total_seconds()
    seconds = boot_s if boot_s is not None else engine.boot_seconds(log_text)  # type: ignore[union-attr]
    return _Seen(signals, served, (said.max_model_len, said.max_num_batched_tokens), seconds, started_at, ended_at)


def rung_record(path: str | Path, log_text: str, **known: Any) -> Rung:
    """Append the rung an observed boot log shows (see record_boot); the rung as recorded."""
    return record_boot(path, log_text, **known)[0]


# -- recording a smoke test ------------------------------------------------------------------------


def _workload_of(result: BenchResult) -> SmokeWorkload:
    done = result.completed or result.num_prompts
    if result.total_input_tokens is None or result.total_output_tokens is None:
        raise InputError("the bench result does not say its input and output tokens: pass the workload it ran")
    return SmokeWorkload(
        input_len=max(1, result.total_input_tokens // done),
        output_len=max(1, result.total_output_tokens // done),
        concurrency=result.max_concurrency or result.num_prompts,
        num_prompts=result.num_prompts,
    )


def _judge(
    ladder: Ladder, rung: Rung, result: BenchResult | None, workload: SmokeWorkload | None, healthy: bool | None
) -> tuple[str, str]:
    """pass or fail, and why; refuses a pass that did not load the rung near its max length."""
    if result is None:
        return "fail", "the bench wrote no result file"
    if not result.all_completed:
        return (
            "fail",
            f"{result.failed or result.num_prompts - result.completed} of {result.num_prompts} requests failed",
        )
    if healthy is False:
        return "fail", "every request completed, but the server was not healthy afterwards"
    mml, c = rung.serve.max_model_len, ladder.min_concurrency
    per_request = workload.input_len + workload.output_len if workload else 0
    if per_request < NEAR_CEILING * mml or workload is None or (workload.concurrency or 0) < c:
        raise InputError(
            f"this bench sent requests of about {per_request:,} tokens at concurrency "
            f"{workload.concurrency if workload else '?'}; a smoke test of max_model_len {mml:,} needs at least "
            f"{int(NEAR_CEILING * mml):,} tokens at concurrency {c}: run the bench ladder_next_rung names"
        )
    return "pass", (
        f"{result.completed}/{result.num_prompts} requests of about {per_request:,} tokens at concurrency "
        f"{workload.concurrency} completed"
    )


def record_smoke(
    path: str | Path,
    bench_json_text: str | None,
    *,
    workload: SmokeWorkload | Mapping[str, int] | None = None,
    server_healthy_after: bool | None = None,
    log_lines: Sequence[str] = (),
) -> tuple[Rung, Ladder]:
    """Fill the last rung's smoke test from the bench client's result file; the rung and the ladder as written.

    `bench_json_text` None means the bench wrote no result: a failed smoke test, `log_lines` saying why.
    `workload` is what the bench ran; by default it is read from the result's token counts.
    """
    path = Path(path)
    engine = get_engine(read_ladder(path).engine)
    result = None if bench_json_text is None else engine.parse_bench_result(bench_json_text)
    ran = _ran(workload, result)

    def change(ladder: Ladder) -> Change[tuple[Rung, Ladder]]:
        last = _smoked_rung(ladder, result)
        outcome, reason = _judge(ladder, last, result, ran, server_healthy_after)
        result_file = rung_file(path, last.index, "smoke.json") if bench_json_text is not None else None
        smoke = SmokeTest(
            attempted=True,
            outcome=outcome,
            reason=reason,
            workload=ran,
            figures=result,
            server_healthy_after=server_healthy_after,
            log_lines=list(log_lines)[-200:],
            result_file=result_file,
            recorded_at=datetime.now(UTC),
            context=_smoke_context(ladder, last, ran, result),
        )
        updated = set_smoke_test(ladder, smoke)
        files = {result_file: bench_json_text} if result_file and bench_json_text else {}
        return Change(updated, (updated.rungs[-1], updated), files)

    return update_ladder(path, change)


def _ran(workload: SmokeWorkload | Mapping[str, int] | None, result: BenchResult | None) -> SmokeWorkload | None:
    """What the bench ran: the workload its caller names, else as its result's token counts say (None: no result)."""
    if workload is not None:
        return SmokeWorkload.model_validate(workload)
    return _workload_of(result) if result is not None else None


def _smoked_rung(ladder: Ladder, result: BenchResult | None) -> Rung:
    """The rung a smoke test is of: the last, refused unless it booted and the bench ran against its model."""
    if not ladder.rungs:
        raise LadderError("the ladder has no rung to smoke-test: record a boot first")
    last = ladder.rungs[-1]
    if not last.status.booted:
        raise LadderError(f"rung {last.index} did not boot ({last.status.value}): there is no server to smoke-test")
    if result and result.model_id and result.model_id != ladder.model.path:
        raise LadderError(f"the bench ran against {result.model_id!r}, but this ladder climbs {ladder.model.path!r}")
    return last


def smoke_context(ladder: Ladder, rung: Rung, workload: SmokeWorkload | None, result: BenchResult) -> ContextDescriptor:
    """The context of a smoke test's figures: the ladder's model, GPU and engine, the rung's config, a cold server
    (a smoke test follows its boot), the load it sent. The ladder does not record its node."""
    gpu = ladder.gpu
    w = (
        Workload(
            input_len=workload.input_len,
            output_len=workload.output_len,
            concurrency=workload.concurrency,
            num_prompts=workload.num_prompts,
        )
        if workload
        else Workload(num_prompts=result.num_prompts)
    )
    hardware = Hardware(gpu_name=gpu.name, gpu_memory_gib=gpu.memory_gib, gpu_count=gpu.count) if gpu else Hardware()
    context = descriptor(
        rung.serve,
        files=local_model_files(ladder.model.path),
        host=None,
        engine=ladder.engine,
        engine_version=rung.signals.engine_version or ladder.engine_version,
        workload=w,
        warmup_requests=0,
        trials=1,
        bench_backend=result.backend,
        compile_cache=rung.signals.compile_cache,
    )
    return context.model_copy(update={"hardware": hardware})


def _smoke_context(ladder: Ladder, rung: Rung, ran: object, result: BenchResult | None) -> ContextDescriptor | None:
    return (
        None if result is None else smoke_context(ladder, rung, ran if isinstance(ran, SmokeWorkload) else None, result)
    )


def smoke_record(path: str | Path, bench_json_text: str | None, **known: Any) -> Rung:
    """Fill the last rung's smoke test (see record_smoke); the rung as recorded."""
    return record_smoke(path, bench_json_text, **known)[0]


# -- recording the ceiling -------------------------------------------------------------------------


__all__ = [
    "not_now",
    "record_boot",
    "record_smoke",
    "rung_record",
    "smoke_context",
    "smoke_record",
]
