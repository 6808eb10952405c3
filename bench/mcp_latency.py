"""Latency of the read-only MCP tools, called in-process through the SDK's client (p50, p99).

The ladder read is a real one: a whole climb run through the tools first (rung_run,
smoke_test, ceiling_record) on the local target, booting the fake vLLM of the tests
(tests/server/fake_vllm.py, its boot logs assembled from the real H200 ones).
Each tool is called `--calls` times after a warm-up; the time is the whole client call
(validation, the tool, structured output), not the tool alone.
Run: python bench/mcp_latency.py [--calls 300] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from redline.server.app import build_server  # noqa: E402
from tests.server.helpers import H200, Env, call, new_ladder, write_env  # noqa: E402

LADDER = "ladders/l8b.yml"
TOOL_OF_ROUTE = {"run_rung": "rung_run", "smoke_test": "smoke_test"}
TARGET_P50_MS = 20.0


async def climb(client: Client, env: Env) -> str:
    """A whole climb through the tools, on the local target booting the fake vLLM; a job id."""
    await new_ladder(client, env, LADDER)
    job_id = ""
    for _ in range(30):
        step = await call(client, "ladder_next_rung", ladder=LADDER)
        if step["route"] == "done":
            return job_id
        if step["route"] == "record_ceiling":
            await call(client, "ceiling_record", ladder=LADDER)
            continue
        args = {"target": "local", "replay": step.get("replay_of")} if step["route"] == "run_rung" else {}
        job = await call(client, TOOL_OF_ROUTE[step["route"]], ladder=LADDER, wait_s=120, **args)
        job_id = job["job_id"]
    raise RuntimeError("the climb did not end")


async def measure(calls: int = 300, warmup: int = 20) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        env = write_env(Path(tmp) / "srv", FAKE_VLLM_KV_TOKENS="300000", FAKE_VLLM_MAX_BATCHED_TOKENS="65536")
        async with Client(build_server(env.config)) as client:
            job_id = await climb(client, env)
            rungs = len((await call(client, "ladder_status", ladder=LADDER))["rows"])
            log = (H200 / "l8b_32k.log").read_text()
            path = env.workspace / LADDER
            original = path.read_text()
            edits = iter(range(10**9))

            async def status_after_a_change() -> Any:
                path.write_text(f"{original}# edit {next(edits)}\n")  # new bytes: the cache must read it again
                return await client.call_tool("ladder_status", {"ladder": LADDER})

            cases: dict[str, Any] = {
                f"ladder_status ({rungs} rungs)": lambda: client.call_tool("ladder_status", {"ladder": LADDER}),
                "ladder_status (file just changed)": status_after_a_change,
                "ladder_next_rung": lambda: client.call_tool("ladder_next_rung", {"ladder": LADDER}),
                f"parse_boot_log ({len(log) // 1024} KiB)": lambda: client.call_tool("parse_boot_log", {"text": log}),
                "job_list": lambda: client.call_tool("job_list", {}),
                "job_status (finished job)": lambda: client.call_tool("job_status", {"job_id": job_id}),
                "resource redline://ladders": lambda: client.read_resource("redline://ladders"),
            }
            results = {}
            for name, make in cases.items():
                for _ in range(warmup):
                    await make()
                times = []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    await make()
                    times.append((time.perf_counter() - t0) * 1000)
                times.sort()
                results[name] = {
                    "p50_ms": statistics.median(times),
                    "p99_ms": times[min(len(times) - 1, int(0.99 * len(times)))],
                    "mean_ms": statistics.fmean(times),
                    "calls": calls,
                }
            return results


def main() -> None:
    logging.basicConfig(level=logging.WARNING)  # before the SDK's own INFO setup: keep the table readable
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = anyio.run(measure, args.calls)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'tool (in-process)':34} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for name, r in results.items():
        flag = "" if r["p50_ms"] < TARGET_P50_MS else f"  over the {TARGET_P50_MS:.0f} ms aim"
        print(f"{name:34} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['mean_ms']:8.2f}{flag}")
    print(f"{args.calls} calls each after warm-up; python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
