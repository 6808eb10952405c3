"""Run a tuning campaign on this host's GPU with the local target (how tests/data/*-h200-*campaign/ were made).

    python3 scripts/gpu-campaign.py CAMPAIGN.yml [--stop-after SECONDS] [--cells N] [--cell-seconds S] [--dry-run]
        [--engine-command 'sglang=sglang-python -m sglang.launch_server']

The campaign resumes after its last finished cell, so a run cut short by
--stop-after (a device call's time limit) or --cells (boot at most N cells this
call, or none with fewer than S seconds left before --stop-after, so that no
cell is cut off half-way and paid for twice) is continued by the next one; the server of the cell in flight is stopped
before it returns. Needs each engine's command and `vllm` (the bench client) on
PATH, and redline importable (PYTHONPATH=src).
"""

import argparse
import time
from pathlib import Path

import anyio
from gpu_common import ENGINE_ENV, add_run_options, engine_commands, progress

from redline.ops.campaign import plan as campaign
from redline.ops.campaign import results as campaign_results
from redline.ops.campaign import run as campaign_runner
from redline.targets import LocalTarget


async def main(args: argparse.Namespace) -> None:
    target = LocalTarget(
        campaign.campaign_target(args.campaign),  # the target the campaign names, here the local host
        workdir=str(args.campaign.parent / "work"),
        engine_env=ENGINE_ENV,
        engine_commands=engine_commands(args.engine_command),
    )
    booted = 0
    deadline = time.monotonic() + args.stop_after
    with anyio.move_on_after(args.stop_after) as scope:

        async def report(fraction: float, text: str) -> None:
            nonlocal booted
            if text.endswith(": booting"):
                booted += 1
                if booted > args.cells:
                    print(f"  {args.cells} cell(s) booted this call; run again for the next", flush=True)
                    scope.cancel()
                    return
                if deadline - time.monotonic() < args.cell_seconds:
                    print(f"  under {args.cell_seconds:.0f} s left for a cell; run again for the next", flush=True)
                    scope.cancel()
                    return
            await progress(fraction, text)

        async with target:
            result = await campaign_runner.campaign_run(
                args.campaign,
                target,
                i_understand_this_submits_jobs=not args.dry_run,
                dry_run=args.dry_run,
                progress=report,
            )
            print(result.model_dump_json(indent=2), flush=True)
    if scope.cancelled_caught:
        print("stopped; run again to resume after the last finished cell", flush=True)
    print(campaign_results.campaign_status(args.campaign).model_dump_json(indent=2), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path)
    parser.add_argument("--cells", type=int, default=10**9, help="boot at most this many cells this call")
    parser.add_argument(
        "--cell-seconds", type=float, default=0.0, help="boot no cell with fewer than this many seconds left"
    )
    parser.add_argument("--dry-run", action="store_true", help="the plan (each cell predicted on this GPU); no boot")
    add_run_options(parser)
    args = parser.parse_args()
    args.campaign = args.campaign.resolve()
    anyio.run(main, args)
