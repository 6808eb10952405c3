"""The one interface every target implements, and the small shapes it returns.

A target runs argv lists on one host. Each kind (local.py, ssh.py) supplies
a handful of primitives (`_exec`, `_read_stats`, `_signal_group`, `_probe`,
`read_text`, `fetch`, `close`); the process-group logic that must be the same
everywhere (start detached, wait for health, stop the group and only it)
lives here, once.
"""

from __future__ import annotations

import abc
import posixpath
import re
import secrets
import signal
import time
from datetime import UTC, datetime
from types import TracebackType
from typing import Literal, NamedTuple, Self

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field

from redline.errors import InputError, TargetError, TargetPathError


class ProcessHandle(BaseModel):
    """One process group started by a target; saved in job files, found again after a restart."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    pid: int = Field(gt=1)
    pgid: int = Field(gt=1)
    run_dir: str
    log_path: str
    started_at: str
    # The leader's /proc starttime: tells our group apart from a later one that reuses the pid.
    start_ticks: int | None = None


class RunResult(BaseModel):
    """What a short command printed and how it ended (negative: killed by that signal)."""

    returncode: int
    stdout: str
    stderr: str


class GpuInfo(BaseModel):
    """One GPU as nvidia-smi names it."""

    name: str
    memory_mib: int


class HostInfo(BaseModel):
    """The host a target runs on; gpus is empty where there is no nvidia-smi."""

    hostname: str
    gpus: list[GpuInfo] = Field(default_factory=list)


class WaitOutcome(BaseModel):
    """How waiting for a server's health ended, and after how long."""

    status: Literal["ready", "exited", "timeout"]
    exit_code: int | None = None
    elapsed_s: float


class ProcStat(NamedTuple):
    """The fields of /proc/PID/stat that group tracking needs."""

    pid: int
    state: str
    pgid: int
    start_ticks: int


_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DEAD = frozenset("ZXx")
NO_CWD = "redline: no such folder: "  # stderr prefix of the scripts below when cd fails

# Shell scripts are constants; every value reaches them as a positional argument,
# so nothing a caller passes is ever parsed by a shell.
PRELUDE = (
    'cwd=$1; shift; while [ "$1" != -- ]; do export "$1"; shift; done; shift; '
    'if [ -n "$cwd" ]; then cd -- "$cwd" 2>/dev/null || '
    '{ printf "%s%s\\n" "' + NO_CWD + '" "$cwd" >&2; exit 1; }; fi; '
)
RUN_SCRIPT = PRELUDE + 'exec "$@"'
# The group leader is a small sh that records the exit code: the launcher that
# forked it is gone by then, so nobody else could report it.
WRAP_SCRIPT = 'd=$1; shift; "$@"; echo $? >"$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"'
# setsid makes the server its own session and group (pgid == the pid echoed: the
# background child of a non-interactive sh is never a group leader, so setsid does
# not fork); the launcher returns at once and the server outlives redline.
LAUNCH_SCRIPT = (
    'd=$1; log=$2; wrap=$3; shift 3; mkdir -p -- "$d" "$(dirname -- "$log")" || exit 1; '
    + PRELUDE
    + 'setsid sh -c "$wrap" sh "$d" "$@" >>"$log" 2>&1 </dev/null & '
    'echo $! >"$d/pid"; echo $!'
)


def env_cwd_args(env: dict[str, str] | None, cwd: str | None) -> list[str]:
    """The positional arguments PRELUDE reads: cwd, KEY=VALUE..., then `--`."""
    check_env(env or {})
    return [cwd or "", *(f"{k}={v}" for k, v in (env or {}).items()), "--"]


def check_argv(argv: list[str]) -> None:
    """Refuse what cannot be an argv: empty, non-strings, NUL bytes."""
    if not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
        raise InputError(f"argv must be a non-empty list of strings without NUL bytes, got {argv!r}")


def check_env(env: dict[str, str]) -> None:
    """Refuse environment names a shell could misread, and NUL bytes in values."""
    bad = [k for k, v in env.items() if not _ENV_KEY.match(k) or "\0" in v]
    if bad:
        raise InputError(f"environment names must look like NAME_1 (letters, digits, _): {bad!r}")


def parse_stats(text: str) -> list[ProcStat]:
    """Parse /proc/PID/stat lines; comm may hold spaces and parens, so split at the last ')'."""
    out = []
    for line in text.splitlines():
        head, _, tail = line.rpartition(")")
        fields = tail.split()
        try:
            out.append(ProcStat(int(head.split(" ", 1)[0]), fields[0], int(fields[2]), int(fields[19])))
        except (ValueError, IndexError):
            continue  # a process that vanished mid-read, or a comm with a newline
    return out


def parse_gpus(text: str) -> list[GpuInfo]:
    """Parse `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits`."""
    gpus = []
    for line in filter(None, map(str.strip, text.splitlines())):
        name, _, mib = line.rpartition(",")
        try:
            gpus.append(GpuInfo(name=name.strip(), memory_mib=int(mib)))
        except ValueError as exc:
            raise TargetError(f"cannot read nvidia-smi GPU line {line!r}") from exc
    return gpus


def new_run_id() -> str:
    """A sortable, unique folder name for one run."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(4)


def check_health_url(url: str) -> httpx.URL:
    """An http(s) URL with a host, or InputError."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InputError(f"health URL {url!r} is not a URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InputError(f"health URL must be http(s)://HOST:PORT/PATH, got {url!r}")
    return parsed


class Target(abc.ABC):
    """Where commands run. Only the process group a handle names is ever signalled."""

    poll_s: float = 0.2  # how often stop() looks at the group
    kill_wait_s: float = 30.0  # after SIGKILL a process in D state can still take a while
    gpu_release_s: float = 120.0  # the driver frees memory after the process is gone
    engine_command: list[str] = ["vllm"]  # what stands for `vllm` on this host (set from the targets file)
    engine_env: dict[str, str] = {}  # environment every engine command gets on this host

    def __init__(self, name: str, workdir: str) -> None:
        self.name = name
        self.workdir = workdir

    # ---- what each kind supplies -------------------------------------------------

    @abc.abstractmethod
    async def _exec(self, argv: list[str], timeout_s: float) -> RunResult:
        """Run argv as is; a missing program is returncode 127; past timeout_s raise CommandTimeout."""

    @abc.abstractmethod
    async def _read_stats(self, pid: int | None) -> str:
        """/proc/PID/stat of pid ('' when gone), or of every process when pid is None."""

    @abc.abstractmethod
    async def _signal_group(self, pgid: int, sig: signal.Signals) -> None:
        """Send sig to process group pgid; a group already gone is not an error."""

    @abc.abstractmethod
    async def _probe(self, url: httpx.URL, timeout_s: float) -> bool:
        """True when a GET of url, made from the target host's point of view, answers 200."""

    @abc.abstractmethod
    async def read_text(self, path: str) -> str:
        """The text of a file on the target host (undecodable bytes replaced)."""

    @abc.abstractmethod
    async def fetch(self, remote_path: str, local_path: str) -> None:
        """Copy a file from the target host to local_path on this machine."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections; processes started stay running."""

    # ---- the interface -----------------------------------------------------------

    async def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60,
    ) -> RunResult:
        """Run a short command to completion; env is added to the host's environment."""
        check_argv(argv)
        if env or cwd:
            argv = ["sh", "-c", RUN_SCRIPT, "sh", *env_cwd_args(env, cwd), *argv]
        result = await self._exec(argv, timeout_s)
        self._raise_no_cwd(result)
        return result

    async def start(
        self, argv: list[str], *, env: dict[str, str], cwd: str | None, log_path: str
    ) -> ProcessHandle:
        """Start argv detached in its own session; output appended to log_path.

        A relative log_path is taken inside the run's own folder.
        """
        check_argv(argv)
        run_dir = posixpath.join(self.workdir, "runs", new_run_id())
        log = posixpath.join(run_dir, log_path)
        started_at = datetime.now(UTC).isoformat()
        args = [run_dir, log, WRAP_SCRIPT, *env_cwd_args(env, cwd), *argv]
        result = await self._exec(["sh", "-c", LAUNCH_SCRIPT, "sh", *args], 60)
        self._raise_no_cwd(result)
        if result.returncode != 0 or not result.stdout.strip().isdigit():
            raise TargetError(f"could not start {argv[0]} on {self.name}: {result.stderr.strip()}")
        pid = int(result.stdout)
        ticks = await self._confirm_leader(pid)
        return ProcessHandle(
            target=self.name,
            pid=pid,
            pgid=pid,
            run_dir=run_dir,
            log_path=log,
            started_at=started_at,
            start_ticks=ticks,
        )

    async def wait_ready(
        self, handle: ProcessHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        """Poll health until it answers 200 (ready), the leader is gone (exited), or deadline_s passes."""
        self._check_handle(handle)
        url = check_health_url(health_url)
        t0 = time.monotonic()
        end = t0 + deadline_s
        while True:
            if await self._probe(url, max(0.2, min(5.0, end - time.monotonic()))):
                return WaitOutcome(status="ready", elapsed_s=time.monotonic() - t0)
            if not await self.is_alive(handle):
                code = await self._exit_code(handle)
                return WaitOutcome(status="exited", exit_code=code, elapsed_s=time.monotonic() - t0)
            if time.monotonic() >= end:
                return WaitOutcome(status="timeout", elapsed_s=time.monotonic() - t0)
            await anyio.sleep(max(0.0, min(poll_s, end - time.monotonic())))

    async def is_alive(self, handle: ProcessHandle) -> bool:
        """True while the group leader this handle names is running."""
        self._check_handle(handle)
        stats = parse_stats(await self._read_stats(handle.pid))
        return any(_is_leader(s, handle) and _in_group(s, handle) for s in stats)

    async def stop(self, handle: ProcessHandle, grace_s: float = 30.0) -> None:
        """SIGTERM the group, SIGKILL it after grace_s, wait until it and its GPU use are gone."""
        self._check_handle(handle)
        seen, left = await self._drain(handle, 0)
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, self.kill_wait_s)):
            if not left:
                break
            await self._signal_group(_safe_pgid(handle.pgid), sig)
            more, left = await self._drain(handle, wait_s)
            seen |= more
        if left:
            raise TargetError(
                f"process group {handle.pgid} on {self.name} still has pids {sorted(left)} "
                f"{self.kill_wait_s:.0f}s after SIGKILL; look at `ps -o pid,stat,cmd -g {handle.pgid}`"
            )
        await self._wait_gpu_release(seen | {handle.pid})

    async def host_info(self) -> HostInfo:
        """The hostname and, where nvidia-smi exists, the GPUs."""
        uname = await self._exec(["uname", "-n"], 30)
        csv = await self._nvidia_smi("--query-gpu=name,memory.total", "--format=csv,noheader,nounits")
        return HostInfo(hostname=uname.stdout.strip(), gpus=parse_gpus(csv or ""))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ---- shared helpers ----------------------------------------------------------

    def _check_handle(self, handle: ProcessHandle) -> None:
        if handle.target != self.name:
            raise InputError(
                f"this handle belongs to target {handle.target!r}, not {self.name!r}; "
                f"open {handle.target!r} to act on it"
            )

    def _raise_no_cwd(self, result: RunResult) -> None:
        if result.returncode != 0 and result.stderr.startswith(NO_CWD):
            raise TargetPathError(f"{result.stderr.strip()} on {self.name}; create it or pick another cwd")

    async def _confirm_leader(self, pid: int) -> int | None:
        """Wait until the new process leads its own group; its start ticks, None if already gone."""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            stats = [s for s in parse_stats(await self._read_stats(pid)) if s.pid == pid]
            if not stats or stats[0].pgid == pid:
                return stats[0].start_ticks if stats else None
            await anyio.sleep(0.01)
        raise TargetError(f"process {pid} on {self.name} did not become a process group leader")

    async def _group_pids(self, handle: ProcessHandle) -> set[int]:
        """Live (not zombie) pids of the handle's group, or none if the pgid now names another group."""
        stats = parse_stats(await self._read_stats(None))
        if any(s.pid == handle.pid and not _is_leader(s, handle) for s in stats):
            return set()
        return {s.pid for s in stats if _in_group(s, handle)}

    async def _drain(self, handle: ProcessHandle, timeout_s: float) -> tuple[set[int], set[int]]:
        """Poll the group until it is empty or timeout_s passes: (every pid seen, pids left)."""
        seen: set[int] = set()
        end = time.monotonic() + timeout_s
        delay = 0.02  # most groups die within milliseconds of the signal: look soon, then back off
        while True:
            left = await self._group_pids(handle)
            seen |= left
            if not left or time.monotonic() >= end:
                return seen, left
            await anyio.sleep(min(delay, max(0.0, end - time.monotonic())))
            delay = min(delay * 2, self.poll_s)

    async def _exit_code(self, handle: ProcessHandle) -> int | None:
        try:
            return int((await self.read_text(posixpath.join(handle.run_dir, "exit"))).strip())
        except (TargetPathError, ValueError):
            return None  # killed by a signal: the wrapper never wrote it

    async def _nvidia_smi(self, *args: str) -> str | None:
        """nvidia-smi's stdout, or None where the host has no nvidia-smi."""
        result = await self._exec(["nvidia-smi", *args], 30)
        if result.returncode == 127:
            return None
        if result.returncode != 0:
            raise TargetError(
                f"nvidia-smi failed on {self.name} (exit {result.returncode}): {result.stderr.strip()}"
            )
        return result.stdout

    async def _wait_gpu_release(self, pids: set[int]) -> None:
        """Wait (bounded) until none of pids holds a GPU context.

        Inside a container nvidia-smi may report host pids, which never match ours;
        then this returns at once.
        """
        end = time.monotonic() + self.gpu_release_s
        while True:
            out = await self._nvidia_smi("--query-compute-apps=pid", "--format=csv,noheader")
            held = pids & {int(p) for p in (out or "").split() if p.isdigit()}
            if not held:
                return
            if time.monotonic() >= end:
                raise TargetError(
                    f"pids {sorted(held)} still hold GPU memory on {self.name} "
                    f"{self.gpu_release_s:.0f}s after they exited; check `nvidia-smi` before the next boot"
                )
            await anyio.sleep(min(1.0, self.poll_s * 5))


def _is_leader(stat: ProcStat, handle: ProcessHandle) -> bool:
    """The process the handle started, not a later one that got its pid."""
    return stat.pid == handle.pid and handle.start_ticks in (None, stat.start_ticks)


def _in_group(stat: ProcStat, handle: ProcessHandle) -> bool:
    """A live member of the handle's group, started no earlier than its leader."""
    return (
        stat.pgid == handle.pgid
        and stat.state not in _DEAD
        and (handle.start_ticks is None or stat.start_ticks >= handle.start_ticks)
    )


def _safe_pgid(pgid: int) -> int:
    """Never 0 or 1: `kill -- -1` would signal every process we may signal."""
    if pgid <= 1:
        raise TargetError(f"refusing to signal process group {pgid}")
    return pgid
