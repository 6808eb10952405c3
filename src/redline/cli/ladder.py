"""`redline ladder init|record|next|status|adopt` (and run|smoke|climb|stop, from cli/climb.py): climb a model's
context ceiling, one clean boot per rung."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

from redline.cli import climb
from redline.cli.common import (
    Subparsers,
    add_config_flag,
    add_workspace_flags,
    ceiling_text,
    command_actions,
    ladder_status_text,
    next_text,
    print_result,
    rows_text,
    widening_from,
)
from redline.cli.flags import add_request_flags, request_from_args
from redline.inputs import read_text
from redline.models.ladder import LadderAdopted
from redline.ops.ladder import adopt
from redline.ops.ladder import ceiling as ladder_ceiling
from redline.ops.ladder import plan as tools
from redline.ops.ladder import record as ladder_record
from redline.ops.predict.model_config import given_config, given_file
from redline.ops.requests import LadderAdoptRequest, LadderInitRequest, LadderNextRequest, LadderStatusRequest
from redline.ops.workspace import layout_workspace


def _when(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-11-30T09:30:22+00:00"
        ) from None


def register(subparsers: Subparsers) -> None:
    actions = command_actions(
        subparsers, "ladder", "climb a model's context ceiling one clean boot at a time (ladder.yml)"
    )
    _register_init(actions)
    _register_record(actions)
    nxt = actions.add_parser("next", help="what to boot or test next, and why")
    nxt.add_argument("--ladder", type=Path, required=True)
    add_request_flags(nxt, LadderNextRequest)
    nxt.add_argument("--json", action="store_true", help="print one JSON object")
    nxt.set_defaults(handler=_run_next)
    status = actions.add_parser("status", help="the rungs as a table and where the climb stands")
    status.add_argument("--ladder", type=Path, required=True)
    add_request_flags(status, LadderStatusRequest)
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(handler=_run_status)
    _register_adopt(actions)
    climb.register_actions(actions)


def _register_adopt(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    adopt = actions.add_parser(
        "adopt", help="copy a ladder climbed elsewhere (with its rung logs) into a workspace, as ladders/NAME.yml"
    )
    adopt.add_argument("src", type=Path, metavar="SRC", help="the ladder.yml to adopt, its .runs folder beside it")
    add_request_flags(adopt, LadderAdoptRequest, skip=("source",))  # SRC: any path the person names
    add_workspace_flags(adopt)
    adopt.set_defaults(handler=_run_adopt)


def _register_init(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = actions.add_parser("init", help="start a ladder.yml for one model on one GPU profile")
    init.add_argument("--ladder", type=Path, required=True, help="the ladder file to create")
    add_request_flags(init, LadderInitRequest)  # the flags are the MCP tool's parameters, from one model
    add_config_flag(init)
    init.set_defaults(handler=_run_init)


def _register_record(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    record = actions.add_parser("record", help="append a boot, fill the last rung's smoke test, or record the ceiling")
    record.add_argument("--ladder", type=Path, required=True)
    what = record.add_mutually_exclusive_group(required=True)
    what.add_argument("--log", type=Path, metavar="BOOT_LOG", help="the engine's full serve log of one boot")
    what.add_argument(
        "--smoke", type=Path, metavar="BENCH_JSON", help="the result file (JSON) the engine's bench client wrote"
    )
    what.add_argument("--ceiling", action="store_true", help="record the ceiling the climb found")
    record.add_argument("--started-at", type=_when, help="with --log: when the boot started")
    record.add_argument("--ended-at", type=_when, help="with --log: when it was ready or failed")
    record.add_argument("--boot-s", type=float, help="with --log: boot seconds (default: from the log's timestamps)")
    record.add_argument("--server-healthy-after", choices=("yes", "no"), help="with --smoke: was /health OK after it")
    record.add_argument(
        "--model-config-file",
        type=Path,
        metavar="CONFIG_JSON",
        help="with --log: the model's config.json, where its folder is not on this machine (kept once: the memory "
        "model sizes the model from it)",
    )
    record.add_argument("--json", action="store_true", help="print one JSON object")
    record.set_defaults(handler=_run_record)


def _run_init(args: argparse.Namespace) -> int:
    request = request_from_args(LadderInitRequest, args)
    given = given_file(request.model_config_file)
    ladder = tools.ladder_init(args.ladder, request, widening=widening_from(args, request.engine), config_text=given)
    mpe = ladder.model.max_position_embeddings
    print(
        f"created {args.ladder}: {ladder.model.key}, floor {ladder.floor.max_model_len:,} / "
        f"{ladder.floor.max_num_batched_tokens:,}, policy {ladder.policy}, max_position_embeddings "
        f"{'unknown' if mpe is None else f'{mpe:,}'}"
    )
    if ladder.known_good is not None:
        print(ladder.known_good.note)
    print(next_text(tools.ladder_next(args.ladder)))
    return 0


def _run_record(args: argparse.Namespace) -> int:
    if args.ceiling:
        ceiling = ladder_ceiling.ceiling_record(args.ladder)
        print_result(args, ceiling, lambda c: ceiling_text(c.model_dump()))
        return 0
    if args.log is not None:
        rung = ladder_record.rung_record(
            args.ladder,
            read_text(args.log),
            log_name=str(args.log),
            started_at=args.started_at,
            ended_at=args.ended_at,
            boot_s=args.boot_s,
            shape=given_config(text)[0] if (text := given_file(args.model_config_file)) else None,
            workspace=layout_workspace(args.ladder.resolve()),
        )
    else:
        healthy = None if args.server_healthy_after is None else args.server_healthy_after == "yes"
        rung = ladder_record.smoke_record(args.ladder, read_text(args.smoke), server_healthy_after=healthy)
    if args.json:
        print(json.dumps(rung.model_dump(mode="json")))
        return 0
    print(rows_text([tools.rung_row(rung)]))
    print(next_text(tools.ladder_next(args.ladder)))
    return 0


def _run_next(args: argparse.Namespace) -> int:
    request = request_from_args(LadderNextRequest, args)
    step = tools.ladder_next(args.ladder, replay=request.replay)
    print_result(args, step, next_text)
    return 0


def _run_adopt(args: argparse.Namespace) -> int:
    request = request_from_args(LadderAdoptRequest, args, source=str(args.src))
    args.workspace.mkdir(parents=True, exist_ok=True)  # a person's folder: made if it is not there yet
    adopted = adopt.ladder_adopt(args.src, args.workspace.resolve(), request)
    print_result(args, adopted, adopted_text)
    return 0


def adopted_text(adopted: LadderAdopted) -> str:
    origin = adopted.adopted_from
    ceiling = adopted.ceiling
    lines = [
        f"adopted {origin.path} (sha256 {origin.sha256[:12]}) as {adopted.path}: {adopted.rungs} rungs, "
        f"{len(adopted.files)} rung files copied",
        ceiling_text(ceiling.model_dump())
        if ceiling is not None
        else "no ceiling recorded: the climb goes on from here",
    ]
    return "\n".join([*lines, next_text(adopted.next)])


def _run_status(args: argparse.Namespace) -> int:
    status = tools.ladder_status(args.ladder)
    print_result(args, status, ladder_status_text)
    return 0


__all__ = ["register"]
