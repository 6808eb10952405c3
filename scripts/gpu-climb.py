"""Climb real ladders on this host's GPU with the local target (how tests/data/*-h200-ladder/ were made).

    python3 scripts/gpu-climb.py OUT_DIR MODELS_DIR KEY [KEY ...]
        [--engine sglang --engine-command 'sglang=sglang-python -m sglang.launch_server']
        [--floor 32768 8192] [--fixed '{"enforce_eager": true}'] [--mnbt-cap 32768] [--stop-after SECONDS]
        [--min-concurrency 16] [--policy predict|signal|doubling] [--deployment-compile-cache cold|warm]

Each KEY is a model folder under MODELS_DIR (config.json and tokenizer; weights
come from --load-format dummy). Each gets OUT_DIR/KEY/ladder.yml, climbed from the
floor at gpu_memory_utilization 0.90 with the predict policy (or the one named). A climb cut short by
--stop-after (a device call's limit) resumes from its ladder.yml on the next run. The ceiling is proven in the
torch.compile cache a deployment boots with (--deployment-compile-cache; default: the local target's, which keeps
none: cold). For a climb from a cold cache, empty ~/.cache/vllm/torch_compile_cache before the run.
Needs the engine's command and `vllm` (the bench client) on PATH, and redline
importable (PYTHONPATH=src).
"""

import argparse
import json
from pathlib import Path

import anyio
from gpu_common import ENGINE_ENV, add_run_options, engine_commands, progress

from redline.ops.ladder import plan as ladder_tools
from redline.ops.ladder.rung import climb
from redline.ops.requests import LadderInitRequest
from redline.targets import LocalTarget


async def main(args: argparse.Namespace) -> None:
    commands = engine_commands(args.engine_command)
    target = LocalTarget("local", workdir=str(args.out / "work"), engine_env=ENGINE_ENV, engine_commands=commands)
    fixed = {"load_format": "dummy"} | json.loads(args.fixed)
    async with target:
        with anyio.move_on_after(args.stop_after) as scope:
            for key in args.keys:
                ladder = args.out / key / "ladder.yml"
                if not ladder.exists():
                    ladder.parent.mkdir(parents=True, exist_ok=True)
                    ladder_tools.ladder_init(
                        ladder,
                        LadderInitRequest(
                            model=key,
                            model_path=str(args.models / key),
                            floor_max_model_len=args.floor[0],
                            floor_max_num_batched_tokens=args.floor[1],
                            engine=args.engine,
                            max_num_batched_tokens_cap=args.mnbt_cap,
                            min_concurrency=args.min_concurrency,
                            policy=args.policy,
                            fixed=fixed,
                            deployment_compile_cache=args.deployment_compile_cache,
                        ),
                    )
                report = await climb(ladder, target, progress=progress)
                print("\n".join(report.steps), flush=True)
                print(ladder.read_text(), flush=True)
        if scope.cancelled_caught:
            print(f"stopped after {args.stop_after:.0f}s; run again to resume from ladder.yml", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("models", type=Path)
    parser.add_argument("keys", nargs="+")
    parser.add_argument("--engine", default="vllm")
    parser.add_argument("--floor", type=int, nargs=2, default=[32768, 8192], metavar=("MAX_MODEL_LEN", "MNBT"))
    parser.add_argument("--fixed", default="{}", help="more serve knobs held fixed, as JSON")
    parser.add_argument("--mnbt-cap", type=int, default=None)
    parser.add_argument("--min-concurrency", type=int, default=1)
    parser.add_argument("--policy", default="predict", choices=["predict", "signal", "doubling"])
    parser.add_argument("--deployment-compile-cache", default=None, choices=["cold", "warm"])
    add_run_options(parser)
    args = parser.parse_args()
    args.out, args.models = args.out.resolve(), args.models.resolve()
    anyio.run(main, args)
