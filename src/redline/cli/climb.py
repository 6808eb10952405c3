"""`redline ladder run|smoke|climb|stop`: rungs booted for real on a target named in a targets file."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

from redline.cli.common import add_config_flag, ladder_status_text, print_progress, target_named, widening_from
from redline.cli.flags import add_request_flags, request_from_args
from redline.ledger import read_ladder
from redline.models import Widening
from redline.ops.ladder import plan as ladder_tools
from redline.ops.ladder import rung as rung_tools
from redline.ops.requests import RungRunRequest, SmokeTestRequest
from redline.ops.workspace import layout_workspace
from redline.targets import Target

_T = TypeVar("_T")

_ACTIONS = (
    ("run", RungRunRequest, "boot the next rung (or --replay N) on the target and record it"),
    ("smoke", SmokeTestRequest, "smoke-test the running rung with the engine's bench client and record it"),
    ("climb", None, "run, smoke-test and record until the ceiling is recorded or a failure needs you"),
    ("stop", None, "stop the server the ladder left up for its smoke test"),
)


def register_actions(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    handlers = {"run": _run, "smoke": _smoke, "climb": _climb, "stop": _stop}
    for name, request, text in _ACTIONS:
        parser = actions.add_parser(name, help=text)
        parser.add_argument("--ladder", type=Path, required=True)
        if request is None:
            parser.add_argument("--target", default="local", help="a target named in the targets file (default: local)")
        else:  # the MCP tool's parameters; at a terminal the target is this host unless told
            add_request_flags(parser, request, defaults={"target": "local"})
        parser.add_argument("--targets", type=Path, help="the targets file (default: this host as `local`)")
        if name in ("run", "climb"):
            add_config_flag(parser)
        if name == "climb":  # `run` has it from its request
            parser.add_argument(
                "--i-understand-this-submits-jobs",
                action="store_true",
                help="boot on a target that submits to a cluster (kubernetes); other targets need none",
            )
        parser.set_defaults(handler=handlers[name])


def _ladder_widening(args: argparse.Namespace) -> Widening | None:
    return widening_from(args, read_ladder(args.ladder).engine) if args.config is not None else None


def _with_target(args: argparse.Namespace, operation: Callable[[Target], Awaitable[_T]]) -> _T:
    async def main() -> _T:
        async with target_named(args.targets, args.target) as target:
            return await operation(target)

    return anyio.run(main)


def _run(args: argparse.Namespace) -> int:
    request = request_from_args(RungRunRequest, args)
    widening = _ladder_widening(args)
    outcome = _with_target(
        args,
        lambda t: rung_tools.rung_run(
            args.ladder,
            t,
            replay=request.replay,
            progress=print_progress,
            widening=widening,
            i_understand_this_submits_jobs=request.i_understand_this_submits_jobs,
            workspace=layout_workspace(args.ladder.resolve()),
        ),
    )
    print(f"rung {outcome.rung.index}: {outcome.rung.status} ({outcome.rung.reason})")
    print(f"next: {outcome.next.route}: {outcome.next.reason}")
    return 0


def _smoke(args: argparse.Namespace) -> int:
    request_from_args(SmokeTestRequest, args)  # checks --target as the MCP tool would
    outcome = _with_target(args, lambda t: rung_tools.smoke_test(args.ladder, t, progress=print_progress))
    verdict = "passed" if outcome.rung.smoke_test.passed else f"failed: {outcome.rung.smoke_test.reason}"
    print(f"smoke test of rung {outcome.rung.index} {verdict}\nnext: {outcome.next.route}: {outcome.next.reason}")
    return 0


def _climb(args: argparse.Namespace) -> int:
    widening = _ladder_widening(args)
    ack = args.i_understand_this_submits_jobs
    report = _with_target(
        args,
        lambda t: rung_tools.climb(
            args.ladder,
            t,
            progress=print_progress,
            widening=widening,
            i_understand_this_submits_jobs=ack,
            workspace=layout_workspace(args.ladder.resolve()),
        ),
    )
    print("\n".join(report.steps))
    print(ladder_status_text(ladder_tools.ladder_status(args.ladder)))
    return 0 if report.final.route == "done" else 1


def _stop(args: argparse.Namespace) -> int:
    stopped = _with_target(args, lambda t: rung_tools.stop_ladder_server(args.ladder, t))
    print("stopped the ladder's server" if stopped else "no server was running for this ladder")
    return 0
