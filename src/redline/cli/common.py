"""What the `redline` commands share: progress on stderr, a result as text or --json, the --config widening,
the --workspace flags, this host as the one target without a targets file, and a ladder's status as text.

    print_result(args, result, plan_text)          # one JSON object with --json, else the text
    widening_from(args, "vllm")                    # what --config's `widen:` gives the engine; None without it
    target_named(args.targets, "local")            # from --targets, else this host (any other name is refused)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import anyio
from pydantic import BaseModel

from redline.cli.flags import add_request_flags, request_from_args
from redline.cli.words import cli_json, cli_words
from redline.errors import InputError
from redline.models import Widening, Widenings
from redline.models.ladder import LadderStatus, NextStep, RungRow
from redline.ops.evidence.versions import EngineVersions
from redline.ops.request_base import Request, require_ack
from redline.ops.requests import ExperimentRunRequest
from redline.server_config import read_widening, read_widenings
from redline.targets import LocalTarget, Target, load_targets, open_target

LOCAL = "local"  # at a terminal with no targets file, this host is the one target
VERSIONS = EngineVersions()  # each target's engine version, asked once per process (a dry run's slow part)
_R = TypeVar("_R")


async def print_progress(fraction: float, text: str) -> None:
    print(f"[{fraction:4.0%}] {cli_words(text)}", file=sys.stderr, flush=True)


def print_result(args: argparse.Namespace, result: BaseModel, text: Callable[[Any], str]) -> None:
    """The result as the CLI prints it: in its own words (its commands and flags, not the MCP tools'), as text or as
    one JSON object."""
    print(json.dumps(cli_json(result.model_dump(mode="json"))) if args.json else cli_words(text(result)))


def experiment_run(
    args: argparse.Namespace,
    request: ExperimentRunRequest,
    tool: str,
    target: Callable[[], Target],
    run: Callable[..., Awaitable[_R]],
) -> _R:
    """An experiment run from the command line, the one way (`redline campaign run`, `redline ab run`): refused
    without the acknowledgement before any target is touched, then run on the target with the request's dry run and
    known-good choice, the --config widening, progress printed and each engine's version asked once."""
    require_ack(request.i_understand_this_submits_jobs, tool, dry_run=request.dry_run)
    widening = widenings_from(args)

    async def main() -> _R:
        async with target() as on:
            return await run(on, **request.run_args(), progress=print_progress, widening=widening, versions=VERSIONS)

    return anyio.run(main)


def target_named(targets: Path | None, name: str) -> Target:
    """The target of that name from the targets file; with none, only this host, as `local`."""
    if targets is not None:
        return open_target(name, load_targets(targets))
    if name != LOCAL:
        raise InputError(f"target {name!r} needs --targets FILE naming it")
    return LocalTarget(LOCAL)


# ---- flags -----------------------------------------------------------------------------------------------------


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help=(
            "a server config (as `redline mcp --config` reads): its `widen:` lets flags and env past the engine's "
            "allowlist, and every rung it touches records it (default: no widening)"
        ),
    )


def widening_from(args: argparse.Namespace, engine: str) -> Widening | None:
    """The widening the --config file gives the engine; None without --config."""
    return None if args.config is None else read_widening(args.config, engine)


def widenings_from(args: argparse.Namespace) -> Widenings | None:
    """What --config widens each engine by (a campaign cell is admitted with its engine's); None without it."""
    return None if args.config is None else read_widenings(args.config)


def add_workspace_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        type=Path,
        default=Path("."),
        help="the folder holding ab/, campaigns/, baselines.yml, known-good.yml (default: here)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def command_actions(subparsers: Subparsers, name: str, help: str) -> Subparsers:
    """`redline NAME ACTION`: the command's parser, and the actions under it."""
    parser = subparsers.add_parser(name, help=help)
    return parser.add_subparsers(dest=f"{name.replace('-', '_')}_command", required=True, metavar="ACTION")


def workspace_operation(
    parser: argparse.ArgumentParser,
    request: type[Request],
    operation: Callable[[Path, Any], BaseModel],
    render: Callable[[Any], str],
    exit_code: Callable[[Any], int] = lambda _: 0,
) -> None:
    """An operation over --workspace as a command: its flags from its request model (the MCP tool's parameters), its
    answer printed in the CLI's words; `exit_code`: 1 where the answer is one the shell should see fail."""
    add_request_flags(parser, request)
    add_workspace_flags(parser)

    def run(args: argparse.Namespace) -> int:
        result = operation(args.workspace.resolve(), request_from_args(request, args))
        print_result(args, result, render)
        return exit_code(result)

    parser.set_defaults(handler=run)


# ---- a ladder as text (ladder status, climb, demo) ---------------------------------------------------------------


def _n(value: int | float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:,}{unit}" if isinstance(value, int) else f"{value:g}{unit}"


def next_text(step: NextStep) -> str:
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


def rows_text(rows: list[RungRow]) -> str:
    table = [_COLUMNS, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    left = {1, 4, 7, 9}
    return "\n".join(
        "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in table
    )


def ceiling_text(c: dict[str, Any]) -> str:
    lines = [
        f"ceiling  max_model_len {c['max_model_len']:,}, max_num_batched_tokens {c['max_num_batched_tokens']:,} "
        f"(rungs {', '.join(map(str, c['proven_by']))}); KV tokens {_n(c.get('kv_cache_tokens'))}, "
        f"concurrency {_n(c.get('max_concurrency'), 'x')}",
        f"serve    {c['serve_command']}",
    ]
    if c.get("headroom"):
        lines.append(f"more     {c['headroom']}")
    return "\n".join(lines)


def ladder_status_text(status: LadderStatus) -> str:
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
        lines += ["", rows_text(status.rows), ""]
    lines.append(next_text(status.next))
    if ladder.ceiling is not None:
        lines.append(ceiling_text(ladder.ceiling.model_dump()))
    return "\n".join(lines)


__all__ = [
    "LOCAL",
    "add_config_flag",
    "add_workspace_flags",
    "ceiling_text",
    "ladder_status_text",
    "next_text",
    "print_progress",
    "print_result",
    "rows_text",
    "target_named",
    "widening_from",
    "widenings_from",
]
