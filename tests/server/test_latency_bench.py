"""bench/mcp_latency.py still runs and measures every read-only tool."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mcp_latency.py"


def test_the_latency_bench_measures_every_read_only_tool() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--calls", "5", "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    measured = {name.split(" ")[0] for name in results}
    assert {"ladder_status", "ladder_next_rung", "parse_boot_log", "job_list", "job_status", "resource"} <= measured
    assert all(0 < r["p50_ms"] <= r["p99_ms"] and r["calls"] == 5 for r in results.values())


def test_the_concurrency_bench_measures_a_cheap_call_during_a_big_parse() -> None:
    bench = BENCH.parent / "mcp_concurrency.py"  # 6 MB: just over the size parsed in a worker process
    done = subprocess.run(
        [sys.executable, str(bench), "--mb", "6", "--parses", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    during = [r for name, r in results.items() if name.endswith("during the parse")]
    assert len(during) == 2 and all(0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"] for r in during)
