"""A stand-in for nvidia-smi on hosts with no GPU, beside the real one on the H200 (the fixture
tests/data/vllm-0.26.0-h200-telemetry/ holds what the real one wrote): the two queries redline asks, in the real
tool's csv,noheader,nounits shape.

    nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits [-lms MS] [-f FILE]   one row, or one every MS into FILE
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits

FAKE_GPU_PIDS: the pids the compute-apps query lists (space-separated); none by default.
FAKE_GPU_VALUES: `field=value` pairs (`;`-separated) that replace the values below: a hostile tool's rows.
FAKE_GPU_SICK: `MARK:field=value;...`: where the health query's -f file's name holds MARK (one bench's health rows,
    e.g. `bench-c2.gpu.csv.health`), every row after the first takes those values: a GPU that turns sick mid-bench (a
    thermal slowdown: `clocks_event_reasons.active=0x0000000000000040;temperature.gpu=94`).
FAKE_GPU_SICK_ONCE: `FOLDER` or `FOLDER:N`: only the Nth (default 1st) sampler FAKE_GPU_SICK marks turns sick (each
    takes the next number by creating FOLDER/<k>), so one bench of one cell is.
FAKE_GPU_OLD_DRIVER=1: the clock event reasons answer only to their old name (clocks_throttle_reasons.active), as a
    driver before 535 names them; the new name is an invalid field, as there.
FAKE_GPU_SLOW_START: seconds a sampler (-lms) takes before its first row, file and all: a tool slow to start on a busy
    host.
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
    "clocks_event_reasons.active": "0x0000000000000000",
    "clocks_throttle_reasons.active": "0x0000000000000000",
    "temperature.gpu": "61",
    "clocks.max.sm": "1980",
    "ecc.errors.uncorrected.volatile.total": "0",
}


def _first(once: str | None) -> bool:
    """True where this marked sampler is the one FAKE_GPU_SICK_ONCE picks (every one without it)."""
    if not once:
        return True
    folder, _, nth = once.partition(":")
    os.makedirs(folder, exist_ok=True)
    k = 1
    while True:
        try:
            os.close(os.open(os.path.join(folder, str(k)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            k += 1
            continue
        return k == int(nth or 1)


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
    if os.environ.get("FAKE_GPU_OLD_DRIVER") == "1" and "clocks_event_reasons.active" in fields:
        print('Field "clocks_event_reasons.active" is not a valid field to query.', file=sys.stderr)
        return 2
    interval = int(args[args.index("-lms") + 1]) / 1000 if "-lms" in args else None
    file = args[args.index("-f") + 1] if "-f" in args else None
    mark, _, sick = os.environ.get("FAKE_GPU_SICK", "").partition(":")
    health = any(f.startswith("clocks_") and f.endswith("reasons.active") for f in fields)  # the health sampler's
    marked = bool(health and file and mark and mark in os.path.basename(file))
    ill = marked and _first(os.environ.get("FAKE_GPU_SICK_ONCE"))
    if interval is not None:
        time.sleep(float(os.environ.get("FAKE_GPU_SLOW_START", "0")))
    out = open(file, "a") if file else sys.stdout  # noqa: SIM115 - open until killed
    rows = 0
    while True:
        now = datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        values = dict(VALUES)
        if rows and ill:
            values.update(dict(pair.split("=", 1) for pair in sick.split(";") if pair))
        print(", ".join(now if f == "timestamp" else values[f] for f in fields), file=out, flush=True)
        rows += 1
        if interval is None:
            return 0
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
