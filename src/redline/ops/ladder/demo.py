"""The built-in demo: a real climb on this machine, vLLM's CPU build and a tiny model redline writes itself.

The tiny Llama holds 2,048 bytes of KV per token; an 8 MiB KV cache
(`--kv-cache-memory-bytes`, held fixed) holds 4,096 tokens, so a smoke test at
the ceiling takes seconds on two cores. The CPU build sizes its KV cache in
blocks of 128 tokens and keeps one back, so the predict policy's joint rung, from
the floor's boot, is max_model_len 3,968: two boots and a smoke test. (The
signal policy's first jump, to the 4,096 tokens the log prints, is a real context
failure, whose estimate the next rung then boots.)
"""

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from redline.engines import DEFAULT_ENGINE, get_engine
from redline.errors import InputError
from redline.ops.ladder import plan as ladder_tools
from redline.ops.requests import LadderInitRequest
from redline.tinymodel import write_tiny_llama

KV_CACHE_BYTES = 8 << 20
FLOOR = 1024  # max_model_len and max_num_batched_tokens of the known-good first boot
MAX_POSITIONS = 1 << 20  # well past the KV cache, so memory (not positions) binds


def cpu_env(workdir: Path) -> dict[str, str]:
    """What the default engine's CPU build needs to run quietly inside workdir."""
    env = get_engine(DEFAULT_ENGINE).cpu_env(str(workdir))
    if env is None:
        raise InputError(f"the {DEFAULT_ENGINE} engine has no CPU build for the demo")
    return env


def prepare_demo(
    workdir: Path, vllm: Path, *, port: int = 8011, target: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """The demo's model, targets file (one target, `demo`) and ladder in workdir; a ladder already there is kept."""
    workdir = workdir.resolve()
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    model = write_tiny_llama(workdir / "models" / "tiny-llama", max_position_embeddings=MAX_POSITIONS)
    spec: dict[str, Any] = {"kind": "local", "workdir": str(workdir / "target")} if target is None else dict(target)
    spec.update(engine_command=[str(vllm.resolve())], env=cpu_env(workdir))
    targets = workdir / "targets.yml"
    YAML().dump({"targets": {"demo": spec}}, targets)
    ladder = workdir / "ladder.yml"
    if not ladder.exists():
        ladder_tools.ladder_init(
            ladder,
            LadderInitRequest(
                model="tiny-llama",
                model_path=str(model),
                floor_max_model_len=FLOOR,
                floor_max_num_batched_tokens=FLOOR,
                fixed={
                    "load_format": "dummy",
                    "enforce_eager": True,
                    "port": port,
                    "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
                },
            ),
        )
    return ladder, targets
