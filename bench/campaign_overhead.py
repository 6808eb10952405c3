"""The campaign machinery's own time against the boots, benches and stops it wraps.

    .venv/bin/python bench/campaign_overhead.py [--cells 3] [--boot-s 2] [--bench-s 1]

Runs a real campaign through redline.ops.campaign.run.campaign_run on this host:
the real LocalTarget, real child processes, and the fake engine
(tests/server/fake_vllm.py) standing in for vLLM, with a boot of --boot-s and
benches of --bench-s seconds. It times every ServeSession.boot, ServeSession.bench
and Target.stop call (the work a campaign wraps). Everything else in the run's
wall time is the machinery: planning, the server record, reading logs, parsing
results, writing verdicts and bench files, and the lock. A real vLLM boot takes one
to fifty minutes, so this fake's seconds-long work is a harsh test of the
percentage. Figures, not a test. The aim is under 2%.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402

from redline.ops import session as session_module  # noqa: E402
from redline.ops.campaign.run import campaign_run  # noqa: E402
from redline.targets import LocalTarget  # noqa: E402
from tests.server.helpers import FAKE_VLLM, LLAMA8B, free_port  # noqa: E402

WRAPPED: dict[str, float] = {"boot": 0.0, "bench": 0.0, "stop": 0.0}


def timed(name: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            WRAPPED[name] += time.perf_counter() - t0

    return wrapper


def campaign(root: Path, cells: int, port: int) -> Path:
    model = root / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    path = root / "campaigns" / "overhead.yml"
    path.parent.mkdir()
    spec = {
        "name": "overhead",
        "target": "local",
        "model": str(model),
        "base": {"max_model_len": 4096, "port": port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4, 16],
        "warmup_requests": 4,
        "grid": {"max_num_batched_tokens": [1024 * (i + 1) for i in range(cells)]},
    }
    path.write_text(json.dumps(spec))
    return path


async def run(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="redline-overhead-"))
    try:
        path = campaign(root, args.cells, free_port())
        target = LocalTarget(
            "local",
            workdir=str(root / "target"),
            engine_command=[sys.executable, str(FAKE_VLLM)],
            engine_env={
                "FAKE_VLLM_BOOT_S": str(args.boot_s),
                "FAKE_VLLM_BENCH_S": str(args.bench_s),
                "FAKE_VLLM_KV_TOKENS": "100000",
            },
        )
        target.stop = timed("stop", target.stop)  # type: ignore[method-assign]
        async with target:
            t0 = time.perf_counter()
            result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
            wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(result.boots, wall)


def report(boots: int, wall: float) -> None:
    wrapped = sum(WRAPPED.values())
    own = wall - wrapped
    print(
        f"campaign: {boots} cells x 3 concurrencies (+ warm-up), {boots} boots, fake engine "
        "(boot and bench times as set)"
    )
    print(f"wall time                  {wall:8.2f} s")
    for name, seconds in WRAPPED.items():
        print(f"  inside {name:<6}            {seconds:8.2f} s")
    print(
        f"machinery's own time       {own:8.3f} s  = {100 * own / wall:.2f}% of wall "
        f"({1000 * own / max(boots, 1):.0f} ms per cell)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=3)
    parser.add_argument("--boot-s", type=float, default=2.0)
    parser.add_argument("--bench-s", type=float, default=1.0)
    args = parser.parse_args()
    session_module.ServeSession.boot = timed("boot", session_module.ServeSession.boot)  # type: ignore[method-assign]
    session_module.ServeSession.bench = timed("bench", session_module.ServeSession.bench)  # type: ignore[method-assign]
    anyio.run(run, args)


if __name__ == "__main__":
    main()
