"""`redline ladder init|record|next|status` (and run|smoke|climb|stop, from cli/climb.py): climb a model's
context ceiling, one clean boot per rung."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from redline.cli import climb
from redline.cli.flags import add_request_flags, request_from_args
from redline.inputs import read_text
from redline.models.ladder import LadderStatus, NextStep, RungRow
from redline.tools import ladder as tools
from redline.tools import ladder_record
from redline.tools.requests import LadderInitRequest, LadderNextRequest, LadderStatusRequest


def _when(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-11-30T09:30:22+00:00"
        ) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ladder", help="climb a model's context ceiling one clean boot at a time (ladder.yml)"
    )
    actions = parser.add_subparsers(dest="ladder_command", required=True, metavar="ACTION")
    _register_init(actions)
    _register_record(actions)
    nxt = actions.add_parser("next", help="what to boot or test next, and why")
    nxt.add_argument("--ladder", type=Path, required=True)
    add_request_flags(nxt, LadderNextRequest)
    nxt.add_argument("--json", action="store_true", help="print one JSON object")
    nxt.set_defaults(handler=run_next)
    status = actions.add_parser("status", help="the rungs as a table and where the climb stands")
    status.add_argument("--ladder", type=Path, required=True)
    add_request_flags(status, LadderStatusRequest)
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(handler=run_status)
    climb.register_actions(actions)


def _register_init(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = actions.add_parser("init", help="start a ladder.yml for one model on one GPU profile")
    init.add_argument("--ladder", type=Path, required=True, help="the ladder file to create")
    add_request_flags(init, LadderInitRequest)  # the flags are the MCP tool's parameters, from one model
    climb.add_config_flag(init)
    init.set_defaults(handler=run_init)


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
    record.add_argument("--json", action="store_true", help="print one JSON object")
    record.set_defaults(handler=run_record)


def run_init(args: argparse.Namespace) -> int:
    request = request_from_args(LadderInitRequest, args)
    ladder = tools.ladder_init(args.ladder, request, widening=climb.widening_from(args, request.engine))
    mpe = ladder.model.max_position_embeddings
    print(
        f"created {args.ladder}: {ladder.model.key}, floor {ladder.floor.max_model_len:,} / "
        f"{ladder.floor.max_num_batched_tokens:,}, policy {ladder.policy}, max_position_embeddings "
        f"{'unknown' if mpe is None else f'{mpe:,}'}"
    )
    if ladder.known_good is not None:
        print(ladder.known_good.note)
    print(_next_text(tools.ladder_next(args.ladder)))
    return 0


def run_record(args: argparse.Namespace) -> int:
    if args.ceiling:
        ceiling = ladder_record.ceiling_record(args.ladder)
        print(json.dumps(ceiling.model_dump(mode="json")) if args.json else _ceiling_text(ceiling.model_dump()))
        return 0
    if args.log is not None:
        rung = ladder_record.rung_record(
            args.ladder,
            read_text(args.log),
            log_name=str(args.log),
            started_at=args.started_at,
            ended_at=args.ended_at,
            boot_s=args.boot_s,
        )
    else:
        healthy = None if args.server_healthy_after is None else args.server_healthy_after == "yes"
        rung = ladder_record.smoke_record(args.ladder, read_text(args.smoke), server_healthy_after=healthy)
    if args.json:
        print(json.dumps(rung.model_dump(mode="json")))
        return 0
    print(_rows_text([tools.rung_row(rung)]))
    print(_next_text(tools.ladder_next(args.ladder)))
    return 0


def run_next(args: argparse.Namespace) -> int:
    request = request_from_args(LadderNextRequest, args)
    step = tools.ladder_next(args.ladder, replay=request.replay)
    print(json.dumps(step.model_dump(mode="json")) if args.json else _next_text(step))
    return 0


def run_status(args: argparse.Namespace) -> int:
    status = tools.ladder_status(args.ladder)
    print(json.dumps(status.model_dump(mode="json")) if args.json else status_text(status))
    return 0


# -- text ------------------------------------------------------------------------------------------


def _n(value: int | float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:,}{unit}" if isinstance(value, int) else f"{value:g}{unit}"


def _next_text(step: NextStep) -> str:
    lines = [f"next     {step.route}"]
    if step.rung is not None:
        about = ", ".join(
            filter(
                None,
                [
                    step.climbs and f"climbs {step.climbs}",
                    f"replay of rung {step.replay_of}" if step.replay_of else None,
                ],
            )
        )
        lines.append(
            f"rung     max_model_len {step.rung.max_model_len:,}, max_num_batched_tokens "
            f"{_n(step.rung.max_num_batched_tokens)}{f' ({about})' if about else ''}"
        )
    lines.append(f"reason   {step.reason}")
    if step.smoke is not None:
        s = step.smoke
        lines.append(
            f"smoke    {s.num_prompts} requests of {s.input_len:,} + {s.output_len:,} tokens "
            f"at concurrency {s.concurrency}"
        )
    if step.command:
        lines.append(f"command  {step.command}")
    return "\n".join(lines)


_COLUMNS = ("#", "climbs", "max_model_len", "batched", "status", "kv tokens", "conc", "smoke", "boot s", "note")


def _cells(row: RungRow) -> tuple[str, ...]:
    note = ", ".join(
        filter(None, [f"replays {row.replay_of}" if row.replay_of else "", "simulated" if row.simulated else ""])
    )
    conc = "-" if row.max_concurrency is None else f"{row.max_concurrency:g}x"
    boot = "-" if row.boot_s is None else f"{row.boot_s:.0f}"
    return (
        str(row.index),
        row.climbs,
        _n(row.max_model_len),
        _n(row.max_num_batched_tokens),
        row.status.value,
        _n(row.kv_cache_tokens),
        conc,
        row.smoke or "-",
        boot,
        note,
    )


def _rows_text(rows: list[RungRow]) -> str:
    table = [_COLUMNS, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    left = {1, 4, 7, 9}
    return "\n".join(
        "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in table
    )


def _ceiling_text(c: dict[str, Any]) -> str:
    lines = [
        f"ceiling  max_model_len {c['max_model_len']:,}, max_num_batched_tokens {c['max_num_batched_tokens']:,} "
        f"(rungs {', '.join(map(str, c['proven_by']))}); KV tokens {_n(c.get('kv_cache_tokens'))}, "
        f"concurrency {_n(c.get('max_concurrency'), 'x')}",
        f"serve    {c['serve_command']}",
    ]
    if c.get("headroom"):
        lines.append(f"more     {c['headroom']}")
    return "\n".join(lines)


def status_text(status: LadderStatus) -> str:
    ladder = status.ladder
    gpu, m = ladder.gpu, ladder.model
    where = f"{gpu.name or 'GPU ?'} x{gpu.count}" if gpu else "GPU ?"
    lines = [
        f"ladder   {status.path}: {m.key} ({m.path}) on {where}, {ladder.engine} {ladder.engine_version or '?'}, "
        f"policy {ladder.policy}, gpu_memory_utilization {ladder.fixed.gpu_memory_utilization}",
        f"floor    max_model_len {ladder.floor.max_model_len:,}, "
        f"max_num_batched_tokens {ladder.floor.max_num_batched_tokens:,}; "
        f"min concurrency {ladder.min_concurrency}; max_position_embeddings {_n(m.max_position_embeddings)}"
        f"{' (long context allowed)' if ladder.allow_long_context else ''}",
    ]
    if status.rows:
        lines += ["", _rows_text(status.rows), ""]
    lines.append(_next_text(status.next))
    if ladder.ceiling is not None:
        lines.append(_ceiling_text(ladder.ceiling.model_dump()))
    return "\n".join(lines)


__all__ = ["register", "status_text"]
