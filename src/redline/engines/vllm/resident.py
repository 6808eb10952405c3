"""A `vllm bench serve` that stays resident for the benches of one server: the bench code is imported once, then each
bench is a request file it runs in-process, so a bench pays no client start-up (10-15 s of imports each time on an
H200 host, about 12 s on a CPU one). The script runs on the target under the engine's own Python; ops/resident.py
drives it through the target's files.

Its folder (argv[1], a run folder of its own) holds, as it goes:
    ready.json        {"version": vllm.__version__, "import_s": the one start-up, "pid": ...}, once it can take benches
    NNNNN.json        a bench to run: {"argv": the arguments after `vllm bench serve`}, written by redline, in order
    NNNNN.log         that bench's own output (vLLM's logger still writes to the script's log)
    NNNNN.done        {"returncode": ..., "seconds": ...}, once it ended; written by rename, so read whole or absent
It ends once no bench came for argv[2] seconds (a redline killed mid-cell leaves nothing running for long) or when
redline stops its process group.
"""

from __future__ import annotations

SCRIPT = r"""
import contextlib, json, os, sys, time, traceback
folder, idle_s = sys.argv[1], float(sys.argv[2])
t0 = time.monotonic()
import vllm
from vllm.benchmarks.serve import add_cli_args, main
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser as Parser
except ImportError:
    from argparse import ArgumentParser as Parser


def put(name, data):
    tmp = os.path.join(folder, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, os.path.join(folder, name))


put("ready.json", {"version": vllm.__version__, "import_s": time.monotonic() - t0, "pid": os.getpid()})
n, waited = 1, time.monotonic()
while time.monotonic() - waited < idle_s:
    request = os.path.join(folder, "%05d.json" % n)
    if not os.path.exists(request):
        time.sleep(0.05)
        continue
    with open(request) as f:
        argv = json.load(f)["argv"]
    t = time.monotonic()
    with open(os.path.join(folder, "%05d.log" % n), "w") as log:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            try:
                parser = Parser(prog="vllm bench serve")
                add_cli_args(parser)
                main(parser.parse_args(argv))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
    put("%05d.done" % n, {"returncode": code, "seconds": time.monotonic() - t})
    n, waited = n + 1, time.monotonic()
"""


__all__ = ["SCRIPT"]
