"""The resident bench client of one server (engines/vllm/resident.py): started on the target beside the server while
it boots (where benches follow) or at its first bench, fed each bench as a request file, stopped with the server.
Only on a target that runs a client process of its own beside the server (`Target.resident_clients`: local and SSH
hosts) and an engine command whose Python can be found (its own `python -m`, a script's #! line, or a one-line
`exec PYTHON -m` wrapper); anywhere else every bench starts its own client, as before.

    # TargetError where it did not start:
    client = await ResidentClient.open(target, python, engine.resident_script, engine.title, env)
    run = await client.bench(argv_after_bench_serve, deadline_s)    # a RunResult, as target.run gives one
    await client.close()
"""

from __future__ import annotations

import json
import math
import posixpath
import shlex
import time
from dataclasses import dataclass

import anyio

from redline.engines.base import Engine
from redline.errors import TargetError, TargetPathError
from redline.targets import ServerHandle, Target
from redline.targets.base import RunResult

READY_S = 180.0  # the one start-up: vLLM's imports, slow on a loaded host
POLL_S = 0.1
IDLE_S = 600  # a client no bench came to for this long ends by itself (a redline killed mid-cell left it)
READY = "ready.json"  # the files of the client's folder, as its script (Engine.resident_script) writes them
# Writes $1 to the file $2 whole: a rename, so the client never reads half a request.
WRITE = 'printf %s "$1" >"$2.tmp" && mv "$2.tmp" "$2"'


def request_name(n: int) -> str:
    return f"{n:05d}.json"


def log_name(n: int) -> str:
    return f"{n:05d}.log"


def done_name(n: int) -> str:
    return f"{n:05d}.done"


async def python_of(target: Target, command: list[str]) -> list[str] | None:
    """The Python an engine command runs under on the target: `python -m ...`'s, or its script's (read by
    python_of_script)."""
    if len(command) >= 3 and command[1] == "-m":
        return command[:1]
    if len(command) != 1:
        return None
    found = await target.run(["sh", "-c", 'command -v -- "$1"', "sh", command[0]], timeout_s=30)
    path = found.stdout.strip()
    if found.returncode != 0 or not path.startswith("/"):
        return None
    head = await target.run(["head", "-c", "512", path], timeout_s=30)
    return python_of_script(head.stdout) if head.returncode == 0 else None


def python_of_script(text: str) -> list[str] | None:
    """A Python script's #! line; or a shell wrapper that is one `exec PYTHON -m MODULE "$@"` and nothing else
    (comments aside), whose PYTHON it is. None for anything else: a wrapper that sets up more than the exec (an
    environment, a folder) would start a client unlike the engine, so it keeps its own."""
    lines = [line.strip() for line in text.splitlines()]
    if not lines or not lines[0].startswith("#!"):
        return None
    if "python" in lines[0]:
        return shlex.split(lines[0][2:])
    if not lines[0].endswith(("/sh", "/bash", " sh", " bash")):
        return None
    body = [line for line in lines[1:] if line and not line.startswith("#")]
    words = shlex.split(body[0]) if len(body) == 1 else []
    if len(words) >= 4 and words[0] == "exec" and "python" in words[1] and words[2] == "-m" and words[-1] == "$@":
        return [words[1]]
    return None


@dataclass
class ResidentClient:
    """One resident client on a target: its process, its folder, the version it imported, its one start-up."""

    target: Target
    handle: ServerHandle
    title: str  # the bench client's engine, as people write it
    version: str | None
    import_s: float
    sent: int = 0
    closed: bool = False  # stopped (with its server, or past a bench's deadline): the next bench needs a new one

    @classmethod
    async def open(
        cls, target: Target, python: list[str], script: str, title: str, env: dict[str, str]
    ) -> ResidentClient:
        """Start the client and wait until it has imported the bench code; TargetError if it cannot."""
        folder = target.new_run_dir()
        argv = [*python, "-c", script, folder, str(IDLE_S)]
        handle = await target.start(argv, env=env, cwd=None, log_path="client.log", run_dir=folder)
        end = time.monotonic() + READY_S
        try:
            while time.monotonic() < end:
                ready = await _read_json(target, posixpath.join(folder, READY))
                if ready is not None:
                    version = ready.get("version")
                    found = str(version) if version else None
                    return cls(target, handle, title, found, _number(ready.get("import_s")) or 0.0)
                if not await target.is_alive(handle):
                    break
                await anyio.sleep(POLL_S)
        except BaseException:  # cancelled while it imports (its server's boot failed, or the run was stopped)
            with anyio.CancelScope(shield=True):
                await target.stop(handle, grace_s=1)
            raise
        log = await _tail(target, handle.log_path)
        await target.stop(handle, grace_s=1)
        raise TargetError(f"the resident bench client did not start ({log or 'no output'})")

    async def bench(self, argv: list[str], deadline_s: float) -> RunResult:
        """Run one bench (the arguments after `vllm bench serve`); past deadline_s the client is stopped, exit 124."""
        self.sent += 1
        folder = self.handle.run_dir
        request = posixpath.join(folder, request_name(self.sent))
        wrote = await self.target.run(["sh", "-c", WRITE, "sh", json.dumps({"argv": argv}), request], timeout_s=30)
        if wrote.returncode != 0:
            raise TargetError(f"could not hand the resident client its bench: {wrote.stderr.strip()}")
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            done = await _read_json(self.target, posixpath.join(folder, done_name(self.sent)))
            if done is not None:
                out = await _tail(self.target, posixpath.join(folder, log_name(self.sent)), whole=True)
                code = _number(done.get("returncode"))
                return RunResult(returncode=1 if code is None else int(code), stdout=out, stderr="")
            if not await self.target.is_alive(self.handle):
                log = await _tail(self.target, self.handle.log_path)
                return RunResult(returncode=1, stdout="", stderr=f"the resident bench client ended: {log}")
            await anyio.sleep(POLL_S)
        await self.close()
        return RunResult(returncode=124, stdout="", stderr=f"the bench did not finish within {deadline_s:.0f}s")

    async def close(self) -> None:
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self.target.stop(self.handle, grace_s=2)

    def describe(self) -> str:
        return f"resident {self.title} bench client {self.version or '?'} (imported once, {self.import_s:.1f} s)"


def _number(value: object) -> float | None:
    """A finite number the client's script wrote, or None (it writes only these; anything else is not trusted)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None  # type: ignore[arg-type]


async def _read(target: Target, path: str) -> str | None:
    """A file the client writes, or None while it is not there."""
    try:
        return await target.read_text(path)
    except TargetPathError:
        return None


async def _read_json(target: Target, path: str) -> dict[str, object] | None:
    text = await _read(target, path)
    try:
        found = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


async def _tail(target: Target, path: str, whole: bool = False) -> str:
    text = await _read(target, path) or ""
    return text if whole else " ".join(text.strip().splitlines()[-3:])[-400:]


class Clients:
    """The resident bench client of each server one session booted and benches: started while the server boots or
    at its first bench, closed when the session stops the server. None for a server the session did not boot (a
    ladder's smoke test benches a server another call left up, and stops nothing), where the target or the engine
    has none, or where it did not start: then every bench starts a client of its own, as before, and says why."""

    def __init__(self, target: Target, client: Engine, executable: list[str]) -> None:
        self.target, self.client, self.executable = target, client, executable
        self.booted: set[str] = set()  # the run folders of the servers this session booted
        self.open: dict[str, ResidentClient] = {}  # by the server's run folder
        self.why_not: str | None = None  # set once: why this session's benches start their own clients

    async def of(self, handle: ServerHandle) -> ResidentClient | None:
        """The server's open client, one started for it now (a bench past its deadline closed the last), or None."""
        kept = self.open.get(handle.run_dir)
        if (kept is not None and not kept.closed) or self.why_not is not None or handle.run_dir not in self.booted:
            return kept
        return await self.start(handle)

    async def start(self, handle: ServerHandle) -> ResidentClient | None:
        """A client for the server, started now: at its first bench, or while it boots where benches are sure to
        follow (its import then costs no time of its own); None, and why_not set, where none can start."""
        if self.why_not is not None:
            return None
        script = self.client.resident_script
        if not self.target.resident_clients or script is None:
            self.why_not = "this target or bench client keeps no client resident"
            return None
        python = await python_of(self.target, self.executable)
        if python is None:
            self.why_not = f"no Python found behind {' '.join(self.executable)} to keep the client resident in"
            return None
        try:
            env = dict(self.target.engine_env)
            client = await ResidentClient.open(self.target, python, script, self.client.title, env)
        except TargetError as exc:
            self.why_not = str(exc)
            return None
        self.open[handle.run_dir] = client
        return client

    def said(self, client: ResidentClient | None) -> str:
        if client is not None:
            return client.describe()
        return "a bench client of its own" + (f" ({self.why_not})" if self.why_not else "")

    async def close(self, handle: ServerHandle) -> None:
        self.booted.discard(handle.run_dir)
        client = self.open.pop(handle.run_dir, None)
        if client is not None:
            await client.close()


__all__ = ["Clients", "ResidentClient", "python_of", "python_of_script"]
