"""The ladder operations, as plain functions that the CLI and the MCP tools both call: starting a ladder, its
next step and its status here; recording a boot, a smoke test and the ceiling in ops/ladder/record.py.

Each returns a pydantic model and raises a RedlineError whose message says what
to do. A refused input changes nothing on disk.
"""

import shlex
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from redline.engines import get_engine
from redline.engines.base import Engine
from redline.errors import InputError
from redline.ledger import create_ladder, read_ladder, rung_file
from redline.models import Widening
from redline.models.known_good import KnownGoodUse
from redline.models.ladder import (
    CLIMBED,
    Floor,
    GpuProfile,
    Ladder,
    LadderStatus,
    ModelRef,
    NextStep,
    Rung,
    RungRow,
)
from redline.models.shape import ConfigValueError, ModelShape, max_positions, shape_of
from redline.ops.evidence.context import CONFIG_JSON, files_from_text, read_config
from redline.ops.evidence.known_good_apply import apply_to_ladder, default_registry
from redline.ops.ladder.ceiling import ceiling_record  # re-exported: callers name it as a ladder operation
from redline.ops.ladder.record import (  # re-exported: callers name them as ladder operations
    not_now,
    record_boot,
    record_smoke,
    rung_record,
    smoke_record,
)
from redline.ops.predict.model_config import given_config
from redline.ops.requests import LadderInitRequest
from redline.policy import next_step, serve_config
from redline.policy.signal import kv_tokens


def _path(path: str | Path) -> Path:
    return Path(path)


def _local_config(model_path: str) -> dict[str, Any] | None:
    """The model folder's config.json, when the folder is here (read as every model-folder file is)."""
    fix = "fix it or pass `max_position_embeddings`"
    try:
        text = read_config(model_path)
    except InputError as exc:
        raise InputError(f"{exc}; {fix}") from exc
    if text is None:
        return None
    files = files_from_text(text)
    if files.config is None:
        raise InputError(f"{Path(model_path) / CONFIG_JSON}: {files.why}; {fix}")
    return files.config


def _model_of(r: LadderInitRequest, config_text: str | None) -> tuple[int | None, ModelShape | None]:
    """The model's positions (the request's, else its config.json's) and shape, from the config.json given (the
    request's model_config_file) or the model folder's here; a value of the wrong kind or size is one line naming
    the field."""
    where = "model_config_file: " if config_text is not None else f"{r.model_path}/"
    try:
        config = given_config(config_text)[1] if config_text is not None else _local_config(r.model_path)
        if config is None:
            return r.max_position_embeddings, None
        mpe = r.max_position_embeddings or max_positions(config)
    except ConfigValueError as exc:
        raise InputError(f"{where}{exc}; fix it or pass `max_position_embeddings`") from exc
    try:
        return mpe, shape_of(config)[0]
    except ConfigValueError as exc:
        raise InputError(f"{where}{exc}; fix it (is it the model's own config.json?)") from exc


def _one_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc']) or 'value'}: {first['msg']}"


def ladder_init(
    path: str | Path,
    request: LadderInitRequest,
    *,
    widening: Widening | None = None,
    known_good: Path | None = None,
    config_text: str | None = None,
) -> Ladder:
    """A new ladder.yml at `path` (refused if one is there); max_position_embeddings from config.json if not given.

    `request.fixed` holds more serve knobs fixed through the climb (e.g. load_format dummy, enforce_eager).
    `widening` is what the person running redline allows the engine beyond its allowlist (never the caller's to ask).
    `known_good` is the registry whose matching entry is applied to the fixed knobs (default: the workspace's).
    `config_text`: the model's config.json as the request's model_config_file gave it (read by the caller), for a
    model whose folder is not on this machine; else the folder's own, when it is here.
    """
    r = request
    eng = get_engine(r.engine)
    mpe, shape = _model_of(r, config_text)
    knobs, used = _fixed_knobs(r, eng, known_good or default_registry(_path(path)))
    ladder = _ladder(r, mpe, knobs, used, shape)
    _check_floor(r, mpe)
    floor = serve_config(ladder, r.floor_max_model_len, r.floor_max_num_batched_tokens)
    eng.admit(floor, widening)  # refused knobs are refused now, not at the first boot
    eng.serve_argv(floor)  # the floor must be bootable argv
    create_ladder(_path(path), ladder)
    return ladder


def _fixed_knobs(r: LadderInitRequest, eng: Engine, registry: Path) -> tuple[dict[str, Any], KnownGoodUse]:
    """The knobs held through the climb: the request's and the long-context env, with the known-good entry."""
    fixed = r.fixed.model_dump(exclude_unset=True) if r.fixed is not None else {}
    long_env = {eng.long_context_env: "1"} if r.allow_long_context and eng.long_context_env else {}
    env = {**fixed.pop("env", {}), **long_env}
    given = set(fixed) | ({"gpu_memory_utilization"} & r.model_fields_set)
    return apply_to_ladder(  # the known-good hook (ops/evidence/known_good_apply.py)
        {"gpu_memory_utilization": r.gpu_memory_utilization, **fixed, "env": env},
        given,
        registry,
        model=r.model_path,
        gpu_name=r.gpu_name,
        engine=r.engine,
        engine_version=r.engine_version,
        skip=r.skip_known_good,
        never=CLIMBED,
    )


def _ladder(
    r: LadderInitRequest, mpe: int | None, knobs: dict[str, Any], used: KnownGoodUse, shape: ModelShape | None
) -> Ladder:
    """The new ladder the request describes; a value the ladder refuses is one line naming its field."""
    profiled = bool(r.gpu_name or r.gpu_memory_gib or r.gpu_count != 1)
    try:
        return Ladder(
            model=ModelRef(key=r.model, path=r.model_path, max_position_embeddings=mpe, shape=shape),
            gpu=GpuProfile(name=r.gpu_name, memory_gib=r.gpu_memory_gib, count=r.gpu_count) if profiled else None,
            engine=r.engine,
            engine_version=r.engine_version,
            policy=r.policy,
            fixed=knobs,
            known_good=used,
            floor=Floor(max_model_len=r.floor_max_model_len, max_num_batched_tokens=r.floor_max_num_batched_tokens),
            min_concurrency=r.min_concurrency,
            kv_block_size=r.kv_block_size,
            allow_long_context=r.allow_long_context,
            max_num_batched_tokens_cap=r.max_num_batched_tokens_cap,
            target_max_num_batched_tokens=r.target_max_num_batched_tokens,
            deployment_compile_cache=r.deployment_compile_cache,
            boot_deadline_s=r.boot_deadline_s,
            smoke_deadline_s=r.smoke_deadline_s,
        )
    except ValidationError as exc:
        raise InputError(f"cannot start a ladder: {_one_line(exc)}") from exc


def _check_floor(r: LadderInitRequest, mpe: int | None) -> None:
    """The floor fits the model's positions, unless the request allows a longer context."""
    if mpe is not None and not r.allow_long_context and r.floor_max_model_len > mpe:
        raise InputError(
            f"the floor max_model_len {r.floor_max_model_len:,} is over the model's max_position_embeddings "
            f"{mpe:,}: lower it, or pass allow_long_context=true"
        )


def _command(path: Path, engine: Engine, step: NextStep) -> str | None:
    if step.rung is None:
        return None
    if step.route != "smoke_test" or step.smoke is None:
        return shlex.join(engine.serve_argv(step.rung))
    folder = (path.parent / rung_file(path, step.rung_index or 0, "smoke.json")).parent
    return shlex.join(engine.bench_argv(step.rung, step.smoke, result_dir=str(folder), result_filename="smoke.json"))


def next_of(path: str | Path, ladder: Ladder, replay: int | None = None) -> NextStep:
    """The next step of a ladder already read from `path`, with the command to paste."""
    step = next_step(ladder, replay)
    return step.model_copy(update={"command": _command(_path(path), get_engine(ladder.engine), step)})


def ladder_next(path: str | Path, replay: int | None = None) -> NextStep:
    """The next step of the climb and why, with the command to paste; `replay` re-runs rung N."""
    return next_of(path, read_ladder(_path(path)), replay)


def expect_step(path: str | Path, route: str, replay: int | None = None, ladder: Ladder | None = None) -> NextStep:
    """The ladder's next step if it is `route`; else a LadderError that says what the ladder wants instead.

    `ladder` is the ladder as already read from `path`, to spare a second read.
    """
    step = next_of(path, ladder, replay) if ladder is not None else ladder_next(path, replay)
    if step.route != route:
        raise not_now(step, route)
    return step


def rung_row(rung: Rung) -> RungRow:
    return RungRow(
        index=rung.index,
        climbs=rung.climbs,
        replay_of=rung.replay_of,
        simulated=rung.simulated,
        max_model_len=rung.serve.max_model_len,
        max_num_batched_tokens=rung.serve.max_num_batched_tokens,
        status=rung.status,
        kv_cache_tokens=kv_tokens(rung),
        max_concurrency=rung.signals.max_concurrency,
        smoke=rung.smoke_test.outcome,
        boot_s=rung.boot_s,
    )


def ladder_status(path: str | Path) -> LadderStatus:
    """The rungs, one row each, and where the climb stands."""
    path = _path(path)
    ladder = read_ladder(path)
    step = next_of(path, ladder)
    return LadderStatus(path=str(path), ladder=ladder, rows=[rung_row(r) for r in ladder.rungs], next=step)


__all__ = [
    "ceiling_record",
    "ladder_init",
    "ladder_next",
    "ladder_status",
    "expect_step",
    "next_of",
    "record_boot",
    "record_smoke",
    "rung_record",
    "rung_row",
    "smoke_record",
]
