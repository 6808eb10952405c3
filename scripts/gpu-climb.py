"""Climb real ladders on this host's GPU with the local target (how tests/data/vllm-0.26.0-h200-ladder/ was made).

    python3 scripts/gpu-climb.py OUT_DIR MODELS_DIR KEY [KEY ...]

Each KEY is a model folder under MODELS_DIR (config.json and tokenizer; weights
come from --load-format dummy). Each gets OUT_DIR/KEY/ladder.yml, climbed from a
floor of 32,768 / 8,192 at gpu_memory_utilization 0.90 with the signal policy.
Needs `vllm` on PATH and redline importable (PYTHONPATH=src).
"""

import sys
from pathlib import Path

import anyio

from redline.targets import LocalTarget
from redline.tools import ladder as ladder_tools
from redline.tools.requests import LadderInitRequest
from redline.tools.rung import climb


async def progress(fraction: float, text: str) -> None:
    print(f"  [{fraction:4.0%}] {text}", flush=True)


async def main(out: Path, models: Path, keys: list[str]) -> None:
    target = LocalTarget("local", workdir=str(out / "work"))
    target.engine_env = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    for key in keys:
        ladder = out / key / "ladder.yml"
        if not ladder.exists():
            ladder.parent.mkdir(parents=True, exist_ok=True)
            ladder_tools.ladder_init(
                ladder,
                LadderInitRequest(
                    model=key,
                    model_path=str(models / key),
                    floor_max_model_len=32768,
                    floor_max_num_batched_tokens=8192,
                    fixed={"load_format": "dummy"},
                ),
            )
        report = await climb(ladder, target, progress=progress)
        print("\n".join(report.steps), flush=True)
        print(ladder.read_text(), flush=True)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3:])
