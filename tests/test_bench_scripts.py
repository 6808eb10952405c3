"""Every bench/*.py still starts: each is run with --help in one child process, so an import that rotted (a name
moved, a module gone) fails here, in the fast lane, not the day someone wants its figures. A bench's figures come
from running it (docs/architecture.md's walk from bench/call_trace.py, tests/test_walk.py); this holds only that it
starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHES = sorted((ROOT / "bench").glob("*.py"))
# A bench known not to start, and why (none now); held to failing still, so the day it starts it joins the others.
PENDING: dict[str, str] = {}
# Each bench run as its own __main__ with --help, all in one child (a process each would pay the imports each
# time): argparse prints its usage and exits 0; any other way out is that bench's failure. One JSON line: each
# bench's failure, or null.
CHILD = """
import contextlib, io, json, runpy, sys, traceback
said = {}
for path in sys.argv[1:]:
    sys.argv, out = [path, "--help"], io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
        said[path] = "it ran to its end instead of answering --help"
    except SystemExit as exc:
        said[path] = None if exc.code in (0, None) and "usage:" in out.getvalue() else f"exit {exc.code}"
    except BaseException:
        said[path] = traceback.format_exc(limit=-3)
print(json.dumps(said))
"""


def test_every_bench_answers_help_but_those_pending() -> None:
    assert len(BENCHES) >= 10, BENCHES
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *map(str, BENCHES)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    said = json.loads(done.stdout.splitlines()[-1])
    failed = {Path(p).name: why for p, why in said.items() if why is not None}
    assert set(failed) == set(PENDING), {
        "failed": failed,
        "starts now: remove it from PENDING": sorted(set(PENDING) - set(failed)),
    }
