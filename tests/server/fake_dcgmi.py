"""A stand-in for DCGM's dcgmi on hosts with no GPU: `dcgmi dmon -e 1002,1005 -d MS`, in the real tool's text as
NVIDIA/DCGM's dcgmi/DeviceMonitor.cpp prints it (no host redline ran on had DCGM to record): a header and a unit
line (repeated every 14 rows), then a row per GPU every MS, `GPU <id>` in 10 columns and each value with three
decimals in 13, until it is killed.

FAKE_DCGM_ROW: the two values each row prints (default "0.612 0.358"; "N/A N/A" for a field with none).
FAKE_DCGM_SLOW_START: seconds it takes before its first line: a tool slow to start on a busy host.
FAKE_DCGM_NO_ENGINE=1: it ends at once, as dcgmi does where no DCGM host engine runs.
"""

from __future__ import annotations

import os
import sys
import time

SHORT = {"1002": "SMACT", "1005": "DRAMA"}  # each field's short name in DCGM's field table
WIDTH = 5 + 6  # the fields' value width (DCGM_FIELD_WIDTH_5) and dmon's margin; each column pads 2 more


def main(args: list[str]) -> int:
    if args[:1] != ["dmon"]:
        print("fake dcgmi: only dmon", file=sys.stderr)
        return 2
    if os.environ.get("FAKE_DCGM_NO_ENGINE") == "1":
        print("Error: unable to establish a connection to the specified host: localhost", file=sys.stderr)
        print("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.", file=sys.stderr)
        return 1
    fields = args[args.index("-e") + 1].split(",")
    delay = int(args[args.index("-d") + 1]) / 1000
    values = os.environ.get("FAKE_DCGM_ROW", "0.612 0.358").split()
    header = f"{'#Entity':<10}" + "".join(f"{SHORT[f]:<{WIDTH + 2}}" for f in fields)
    units = f"{'ID':<10}" + "".join(f"{'':<{WIDTH + 2}}" for _ in fields)
    time.sleep(float(os.environ.get("FAKE_DCGM_SLOW_START", "0")))
    rows = 0
    while True:
        if rows % 14 == 0:
            print(f"{header}\n{units}", flush=True)
        print(f"{'GPU 0':10}" + "".join(f"{v:{WIDTH + 2}s}" for v in values), flush=True)
        rows += 1
        time.sleep(delay)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
