"""`redline ladder run|smoke|climb|stop`: rungs booted for real on a target named in a targets file."""

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from redline.errors import InputError
from redline.targets import LocalTarget, Target, load_targets, open_target
from redline.tools import ladder as ladder_tools
from redline.tools import rung as rung_tools


def register_actions(actions: argparse._SubParsersAction) -> None:
    for name, handler, text in (
        ("run", _run, "boot the next rung (or --replay N) on the target and record it"),
        ("smoke", _smoke, "smoke-test the running rung with `vllm bench serve` and record it"),
        ("climb", _climb, "run, smoke-test and record until the ceiling is recorded or a failure needs you"),
        ("stop", _stop, "stop the server the ladder left up for its smoke test"),
    ):
        parser = actions.add_parser(name, help=text)
        parser.add_argument("--ladder", type=Path, required=True)
        parser.add_argument("--target", default="local", help="a target named in the targets file (default: local)")
        parser.add_argument("--targets", type=Path, help="the targets file (default: this host as `local`, engine `vllm`)")
        if name == "run":
            parser.add_argument("--replay", type=int, metavar="N", help="re-run rung N's exact config as a new rung")
        parser.set_defaults(handler=handler)


def target_from(args: argparse.Namespace) -> Target:
    if args.targets is None:
        if args.target != "local":
            raise InputError(f"target {args.target!r} needs --targets FILE naming it")
        return LocalTarget("local")
    return open_target(args.target, load_targets(args.targets))


async def print_progress(fraction: float, text: str) -> None:
    print(f"[{fraction:4.0%}] {text}", file=sys.stderr, flush=True)


def _with_target(args: argparse.Namespace, operation: Callable[[Target], Awaitable[object]]) -> object:
    async def main() -> object:
        async with target_from(args) as target:
            return await operation(target)
    return anyio.run(main)


def _run(args: argparse.Namespace) -> int:
    outcome = _with_target(args, lambda t: rung_tools.rung_run(args.ladder, t, replay=args.replay, progress=print_progress))
    print(f"rung {outcome.rung.index}: {outcome.rung.status} ({outcome.rung.reason})\nnext: {outcome.next.route}: {outcome.next.reason}")
    return 0


def _smoke(args: argparse.Namespace) -> int:
    outcome = _with_target(args, lambda t: rung_tools.smoke_test(args.ladder, t, progress=print_progress))
    verdict = "passed" if outcome.rung.smoke_test.passed else f"failed: {outcome.rung.smoke_test.reason}"
    print(f"smoke test of rung {outcome.rung.index} {verdict}\nnext: {outcome.next.route}: {outcome.next.reason}")
    return 0


def _climb(args: argparse.Namespace) -> int:
    from redline.cli.ladder import status_text  # cli.ladder registers this module: import at use

    report = _with_target(args, lambda t: rung_tools.climb(args.ladder, t, progress=print_progress))
    print("\n".join(report.steps))
    print(status_text(ladder_tools.ladder_status(args.ladder)))
    return 0 if report.final.route == "done" else 1


def _stop(args: argparse.Namespace) -> int:
    stopped = _with_target(args, lambda t: rung_tools.stop_server(args.ladder, t))
    print("stopped the ladder's server" if stopped else "no server was running for this ladder")
    return 0
