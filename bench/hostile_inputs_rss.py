"""The server's peak RSS (VmHWM) and time under issue 32's big and blocking inputs, each case in a child process of
its own: the real MCP server in-process (build_server, the in-memory MCP client) for the tool calls, and the real
LocalTarget's http_text (what a session calls for health, metrics and the accuracy gate) for the engine's port.

  config.json -> /dev/zero      memory_predict on a model folder whose config.json links to /dev/zero (item 2)
  config.json a FIFO x 50       fifty memory_predict calls at once on a FIFO, then job_list (item 2)
  2 GiB on the engine's port    http_text of a neighbour that answers 2 GiB on the port (item 5)
  15.6 MB flat-list ladder      ladder_status on a ladder of 7.8 million list items (item 7)

Issue 38's (--round 4):

  15.6 MB flat campaign         campaign_status on a campaign file of one flat list of 3.9 million items (item 2)
  same, at the CLI              `redline campaign status` on it, a child process (its own peak RSS and time)
  48 MiB model_config_file      memory_predict given a 48 MiB config.json in the workspace (item 3)

Each row: the peak RSS after the server answered one cheap call (job_list), the peak after the case, the seconds the
case took, and what it said. A case the old code would read without end runs under an address-space limit (--limit).

Run: python bench/hostile_inputs_rss.py [--round 3|4] [--limit-gib 4] [--answer-gib 2]
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = (
    "config.json -> /dev/zero",
    "config.json a FIFO x 50",
    "2 GiB on the engine's port",
    "15.6 MB flat-list ladder",
)
ROUND_4 = (
    "15.6 MB flat campaign",
    "same, at the CLI",
    "48 MiB model_config_file",
)
NEIGHBOUR = """
import socket, sys
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
size = int(sys.argv[2])
while True:
    conn, _ = listener.accept()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % size)
    sent, chunk = 0, b"0" * (1 << 20)
    try:
        while sent < size:
            sent += conn.send(chunk[: size - sent])
    except OSError:
        pass
    conn.close()
"""


def hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def unblocker(fifo: Path, done: threading.Event) -> None:
    """Readers the old code left waiting on the FIFO are given its end after 10 s, so the case ends."""
    if done.wait(10):
        return
    while not done.wait(0.05):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


async def run_case(case: str, folder: Path, answer_bytes: int) -> str:
    import anyio
    from mcp import Client

    from redline.server.app import build_server
    from tests.server.helpers import write_env

    env = write_env(folder / "srv")
    model = env.workspace / "model"  # where memory_predict may read a model folder (docs/security.md, 38.9)
    model.mkdir()
    args = {"model": str(model), "max_model_len": 4096, "gpu_name": "NVIDIA H200", "gpu_memory_gib": 139.8}
    async with Client(build_server(env.config)) as client:
        await client.call_tool("job_list", {})
        base = hwm_mib()
        start = time.perf_counter()
        if case == CASES[0]:
            (model / "config.json").symlink_to("/dev/zero")
            said = await _said(client, "memory_predict", args)
        elif case == CASES[1]:
            os.mkfifo(model / "config.json")
            done = threading.Event()
            threading.Thread(target=unblocker, args=(model / "config.json", done), daemon=True).start()
            said_all: list[str] = []

            async def one() -> None:
                said_all.append(await _said(client, "memory_predict", args))

            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(one)
            await client.call_tool("job_list", {})
            done.set()
            said = f"{len(said_all)} answered; {said_all[0]}"
        elif case == CASES[2]:
            said = await _port(folder, answer_bytes)
        elif case in ROUND_4:
            said = await _round_4(client, case, env.workspace, args)
        else:
            ladders = env.workspace / "ladders"
            ladders.mkdir(parents=True, exist_ok=True)
            (ladders / "flat.yml").write_text("[" + "1," * 7_799_999 + "1]\n")
            said = await _said(client, "ladder_status", {"ladder": "ladders/flat.yml"})
        took = time.perf_counter() - start
    return json.dumps({"base": base, "peak": hwm_mib(), "s": took, "said": said.replace(str(folder), "")[:220]})


def _streamed(path: Path, head: str, chunk: str, times: int, tail: str) -> None:
    """Write head + chunk x times + tail without holding the whole text: the bench's own memory stays out of the
    server's peak."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as file:
        file.write(head)
        for _ in range(times):
            file.write(chunk)
        file.write(tail)


async def _round_4(client, case: str, workspace: Path, args: dict) -> str:  # type: ignore[no-untyped-def]
    """Issue 38's big files, through the server (the CLI's case runs `redline` as a child)."""
    if case == ROUND_4[2]:
        config = (ROOT / "src/redline/data/boots/models/llama8b/config.json").read_text().strip()
        _streamed(workspace / "big-config.json", '{"padding": "', "x" * (1 << 20), 48, '", ' + config[1:])
        given = {"model": "llama8b", "model_config_file": "big-config.json"}
        return await _said(client, "memory_predict", args | given)
    campaign = workspace / "campaigns" / "flat.yml"
    _streamed(campaign, "name: c1\ncells:\n", "- 1\n" * 100_000, 39, "")
    if case == ROUND_4[0]:
        return await _said(client, "campaign_status", {"campaign": "campaigns/flat.yml"})
    took, peak, said = _cli(["campaign", "status", "--campaign", str(campaign)])
    small = workspace / "campaigns" / "small.yml"
    small.write_text("name: small\ncells: [1]\n")
    start_s = _cli(["campaign", "status", "--campaign", str(small)])[0]
    return f"[child: {peak:.0f} MiB peak, {took:.2f} s; a one-line file's {start_s:.2f} s] {said}"


def _cli(words: list[str]) -> tuple[float, float, str]:
    """`redline WORDS` as a child: its seconds, its peak RSS (MiB), the last words it printed."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "redline", *words], capture_output=True, text=True)
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return took, peak, " ".join((done.stderr or done.stdout).split()[-30:])


async def _said(client, tool: str, args: dict) -> str:  # type: ignore[no-untyped-def]
    try:
        result = await client.call_tool(tool, args)
    except MemoryError:
        return "MemoryError (the address-space limit)"
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    text = re.sub(r"^Error executing tool \w+: ", "", " ".join(text.split()))
    return ("refused: " if result.is_error else "answered: ") + text


async def _port(folder: Path, answer_bytes: int) -> str:

    from redline.targets import LocalTarget
    from tests.targets.conftest import free_port, wait_port

    port = free_port()
    script = folder / "neighbour.py"
    script.write_text(NEIGHBOUR)
    async with LocalTarget("local", workdir=str(folder / "work")) as target:
        handle = await target.start(
            [sys.executable, str(script), str(port), str(answer_bytes)], env={}, cwd=None, log_path="n.log"
        )
        try:
            await wait_port(port)
            try:
                text = await target.http_text(handle, f"http://127.0.0.1:{port}/metrics", timeout_s=120)
            except MemoryError:
                return "MemoryError (the address-space limit)"
            return f"read {len(text or ''):,} characters of {answer_bytes:,} bytes"
        finally:
            await target.stop(handle, grace_s=0)


def child(case: str, answer_bytes: int, limit_gib: float) -> None:
    import anyio

    if case == CASES[0] and limit_gib > 0:
        cap = int(limit_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    with tempfile.TemporaryDirectory() as folder:
        print(anyio.run(run_case, case, Path(folder), answer_bytes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-gib", type=float, default=4, help="address space of the /dev/zero case (0: none)")
    parser.add_argument("--answer-gib", type=float, default=2, help="the neighbour's answer on the engine's port")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one case may take")
    parser.add_argument("--round", type=int, choices=(3, 4), default=3, help="issue 32's cases (3) or issue 38's (4)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    answer = int(args.answer_gib * (1 << 30))
    if args.child:
        return child(args.child, answer, args.limit_gib)
    print(f"{'case':30s}{'base MiB':>10s}{'peak MiB':>10s}{'s':>9s}  what it said")
    for case in CASES if args.round == 3 else ROUND_4:
        argv = [sys.executable, __file__, "--child", case, "--answer-gib", str(args.answer_gib)]
        argv += ["--limit-gib", str(args.limit_gib)]
        out, peak = watched(argv, args.timeout)
        try:
            got = json.loads(out.strip().splitlines()[-1])
            print(f"{case:30s}{got['base']:10.0f}{got['peak']:10.0f}{got['s']:9.2f}  {got['said']}")
        except (IndexError, json.JSONDecodeError):
            seen = f"{peak:10.0f}" if peak else f"{'-':>10s}"
            took = ">" + str(int(args.timeout))
            print(f"{case:30s}{'-':>10s}{seen}{took:>9s}  did not finish (stopped; its peak so far)")


def watched(argv: list[str], timeout: float) -> tuple[str, float]:
    """A case's output, run as a child stopped after `timeout` seconds; and the highest RSS (MiB) the child and its
    own children reached while it was watched (what a stopped case had taken by then)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    peak, deadline = 0.0, time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, _tree_rss_mib(proc.pid))
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, 9)
        proc.wait()
        return "", peak
    return proc.stdout.read() if proc.stdout else "", peak


def _tree_rss_mib(pid: int) -> float:
    """VmRSS of a process and of the processes its session holds, summed (a CLI child of a case counts)."""
    total = 0.0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            if int(os.getsid(int(status.parent.name))) != pid:
                continue
        except (OSError, ValueError):
            continue
        for line in text.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    return total


if __name__ == "__main__":
    main()
