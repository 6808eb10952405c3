"""Run an A/B on this host's GPU with the local target (how tests/data/vllm-0.26.0-h200-ab/ was made).

    python3 scripts/gpu-ab.py WORKSPACE SPEC.yml --models DIR [--stop-after SECONDS]

SPEC.yml names its models under /models/ (as the committed fixtures do); --models
says where that folder is on this host. The A/B resumes after its last finished
trial, so a run cut short by --stop-after (a device call's limit) is continued by
the next one; the trial in flight is stopped before it returns.
Needs `vllm` on PATH and redline importable (PYTHONPATH=src).
"""

import argparse
import time
from pathlib import Path

import anyio
from ruamel.yaml import YAML

from redline.models.ab import AbSpec
from redline.targets import LocalTarget
from redline.tools.ab import ab_run

ENGINE_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}


async def progress(fraction: float, text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')} {fraction:4.0%}] {text}", flush=True)


async def main(workspace: Path, spec_file: Path, models: Path, stop_after: float) -> None:
    text = spec_file.read_text().replace("/models/", f"{models}/")
    spec = AbSpec.model_validate(YAML(typ="safe").load(text))
    target = LocalTarget(spec.target, workdir=str(workspace / "work"), engine_env=ENGINE_ENV)
    workspace.mkdir(parents=True, exist_ok=True)
    async with target:
        with anyio.move_on_after(stop_after) as scope:
            result = await ab_run(workspace, spec, target, i_understand_this_submits_jobs=True, progress=progress)
            print(result.model_dump_json(indent=2), flush=True)
        if scope.cancelled_caught:
            print(f"stopped after {stop_after:.0f}s; run again to resume after the last finished trial", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("spec", type=Path)
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--stop-after", type=float, default=1e9, help="seconds before the run stops itself")
    args = parser.parse_args()
    anyio.run(main, args.workspace.resolve(), args.spec.resolve(), args.models.resolve(), args.stop_after)
