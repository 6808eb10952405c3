"""Run an A/B on this host's GPU with the local target (how tests/data/vllm-0.26.0-h200-ab/ was made).

    python3 scripts/gpu-ab.py WORKSPACE SPEC.yml --models DIR [--stop-after SECONDS]
        [--engine-command 'sglang=sglang-python -m sglang.launch_server']

SPEC.yml names its models under /models/ (as the committed fixtures do); --models
says where that folder is on this host. The A/B resumes after its last finished
trial, so a run cut short by --stop-after (a device call's limit) is continued by
the next one; the trial in flight is stopped before it returns.
Needs each engine's command and `vllm` (the bench client) on PATH, and redline
importable (PYTHONPATH=src).
"""

import argparse
from pathlib import Path

import anyio
from gpu_common import ENGINE_ENV, add_run_options, engine_commands, progress
from ruamel.yaml import YAML

from redline.models.ab import AbSpec
from redline.ops.ab.run import ab_run
from redline.targets import LocalTarget


async def main(args: argparse.Namespace) -> None:
    workspace, stop_after = args.workspace, args.stop_after
    text = args.spec.read_text().replace("/models/", f"{args.models}/")
    spec = AbSpec.model_validate(YAML(typ="safe").load(text))
    commands = engine_commands(args.engine_command)
    target = LocalTarget(spec.target, workdir=str(workspace / "work"), engine_env=ENGINE_ENV, engine_commands=commands)
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
    add_run_options(parser)
    args = parser.parse_args()
    args.workspace, args.spec, args.models = args.workspace.resolve(), args.spec.resolve(), args.models.resolve()
    anyio.run(main, args)
