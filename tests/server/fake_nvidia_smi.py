"""A stand-in for nvidia-smi on hosts with no GPU, beside the real one on the H200 (the fixture
tests/data/vllm-0.26.0-h200-telemetry/ holds what the real one wrote): the two queries redline asks, in the real
tool's csv,noheader,nounits shape.

    nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits [-lms MS] [-f FILE]   one row, or one every MS into FILE
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits

FAKE_GPU_PIDS: the pids the compute-apps query lists (space-separated); none by default.
FAKE_GPU_VALUES: `field=value` pairs (`;`-separated) that replace the values below: a hostile tool's rows.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime

VALUES = {
    "name": "Fake GPU (redline tests)",
    "memory.total": "143771",
    "memory.reserved": "616",
    "index": "0",
    "uuid": "GPU-00000000-fake-0000-0000-000000000000",
    "utilization.gpu": "87",
    "utilization.memory": "41",
    "memory.used": "127389",
    "power.draw": "[N/A]",
    "clocks.sm": "1980",
}


def main(args: list[str]) -> int:
    opts = dict(a.split("=", 1) for a in args if a.startswith("--") and "=" in a)
    if "--query-compute-apps" in opts:
        for pid in os.environ.get("FAKE_GPU_PIDS", "").split():
            app = {"pid": pid, "process_name": "python3", "used_memory": "1024"}
            print(", ".join(app[f] for f in opts["--query-compute-apps"].split(",")))
        return 0
    given = os.environ.get("FAKE_GPU_VALUES", "")
    VALUES.update(dict(pair.split("=", 1) for pair in given.split(";") if pair))
    fields = opts["--query-gpu"].split(",")
    interval = int(args[args.index("-lms") + 1]) / 1000 if "-lms" in args else None
    out = open(args[args.index("-f") + 1], "a") if "-f" in args else sys.stdout  # noqa: SIM115 - open until killed
    while True:
        now = datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        print(", ".join(now if f == "timestamp" else VALUES[f] for f in fields), file=out, flush=True)
        if interval is None:
            return 0
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
