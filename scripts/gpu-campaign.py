"""Run a tuning campaign on this host's GPU with the local target (how tests/data/vllm-0.26.0-h200-campaign/ was made).

    python3 scripts/gpu-campaign.py CAMPAIGN.yml [--stop-after SECONDS]

The campaign resumes after its last finished cell, so a run cut short by
--stop-after (a device call's time limit) is continued by the next one; the
server of the cell in flight is stopped before it returns.
Needs `vllm` on PATH and redline importable (PYTHONPATH=src).
"""

import argparse
import time
from pathlib import Path

import anyio

from redline.targets import LocalTarget
from redline.tools import campaign

ENGINE_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}


async def progress(fraction: float, text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')} {fraction:4.0%}] {text}", flush=True)


async def main(path: Path, stop_after: float) -> None:
    target = LocalTarget("local", workdir=str(path.parent / "work"), engine_env=ENGINE_ENV)
    async with target:
        with anyio.move_on_after(stop_after) as scope:
            result = await campaign.campaign_run(path, target, i_understand_this_submits_jobs=True, progress=progress)
            print(result.model_dump_json(indent=2), flush=True)
        if scope.cancelled_caught:
            print(f"stopped after {stop_after:.0f}s; run again to resume after the last finished cell", flush=True)
    print(campaign.campaign_status(path).model_dump_json(indent=2), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path)
    parser.add_argument("--stop-after", type=float, default=1e9, help="seconds before the run stops itself")
    args = parser.parse_args()
    anyio.run(main, args.campaign.resolve(), args.stop_after)
