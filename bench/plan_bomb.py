"""A plan-size bomb against the in-process MCP server: a campaign grid of 32 values on each of its 9 levers
(32^9 = 35 trillion cells) sent to campaign_init, and left on disk for campaign_plan to read, again and again.

Each refusal must take under 100 ms and leave the process's RSS within 20 MB of where it started (the cap is
checked from the lever lengths, before a cell is built), while a cheap call (job_list) made meanwhile keeps its
p99 under 50 ms. Exits 1 when a target is missed.
Run: python bench/plan_bomb.py [--rounds 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
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
from tests.server.helpers import free_port, write_env  # noqa: E402
from tests.server.scenario import CAMPAIGN, campaign_spec  # noqa: E402
from tests.server.test_hardening_plans import BOMB_LINE, LEVERS_32  # noqa: E402

TARGET_REFUSAL_MS, TARGET_RSS_MB, TARGET_P99_MS = 100.0, 20.0, 50.0


def rss_mb() -> float:
    """This process's resident set now, from /proc (MB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def p99(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.99) - 1)]


async def refuse(client: Client, tool: str, args: dict[str, Any]) -> float:
    """One bomb call; its milliseconds. It must be refused with the cap's line."""
    start = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = (time.perf_counter() - start) * 1000
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error and BOMB_LINE in text, text
    return elapsed


async def measure(rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = write_env(Path(tmp) / "srv")
        spec = campaign_spec(free_port(), grid=LEVERS_32)
        (env.workspace / "campaigns").mkdir(parents=True)
        (env.workspace / CAMPAIGN).write_text(json.dumps(spec))  # a file left on disk with the bomb
        async with Client(build_server(env.config)) as client:
            for _ in range(5):  # warm-up: imports, caches
                await client.call_tool("job_list", {})
                await refuse(client, "campaign_plan", {"campaign": CAMPAIGN})
            before, peak_before = rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            init_ms, plan_ms, cheap_ms = [], [], []
            done = anyio.Event()

            async def cheap() -> None:
                while not done.is_set():
                    start = time.perf_counter()
                    await client.call_tool("job_list", {})
                    cheap_ms.append((time.perf_counter() - start) * 1000)

            async with anyio.create_task_group() as tg:
                tg.start_soon(cheap)
                for _ in range(rounds):
                    init_ms.append(
                        await refuse(client, "campaign_init", {"campaign": "campaigns/c2.yml", "spec": spec})
                    )
                    plan_ms.append(await refuse(client, "campaign_plan", {"campaign": CAMPAIGN}))
                done.set()
            after, peak_after = rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "cells_in_grid": float(32**9),
        "campaign_init_refusal_ms_max": max(init_ms),
        "campaign_init_refusal_ms_median": statistics.median(init_ms),
        "campaign_plan_refusal_ms_max": max(plan_ms),
        "campaign_plan_refusal_ms_median": statistics.median(plan_ms),
        "rss_before_mb": before,
        "rss_after_mb": after,
        "rss_change_mb": after - before,
        "peak_rss_change_mb": peak_after - peak_before,
        "cheap_calls": float(len(cheap_ms)),
        "cheap_call_p50_ms": statistics.median(cheap_ms),
        "cheap_call_p99_ms": p99(cheap_ms),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    figures = anyio.run(measure, args.rounds)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for name, value in figures.items():
            print(f"{name:34} {value:,.2f}")
    refusal = max(figures["campaign_init_refusal_ms_max"], figures["campaign_plan_refusal_ms_max"])
    rss = max(abs(figures["rss_change_mb"]), figures["peak_rss_change_mb"])
    ok = refusal < TARGET_REFUSAL_MS and rss < TARGET_RSS_MB and figures["cheap_call_p99_ms"] < TARGET_P99_MS
    print(
        f"refusal max {refusal:.1f} ms (< {TARGET_REFUSAL_MS:g}), RSS change {rss:.1f} MB (< {TARGET_RSS_MB:g}), "
        f"cheap call p99 {figures['cheap_call_p99_ms']:.1f} ms (< {TARGET_P99_MS:g}): {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
