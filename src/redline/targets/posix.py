"""A server as a POSIX process group: the logic the local and SSH targets share.

Each POSIX kind supplies a handful of primitives (`_exec`, `_read_stats`,
`_signal_group`, `_probe`, `read_text`, `fetch`, `close`); what must be the
same everywhere (start detached in its own group, wait for health, stop the
group and only it, wait until the GPU lets go) lives here, once.
"""

from __future__ import annotations

import abc
import posixpath
import signal
import time
from datetime import UTC, datetime

import anyio
import httpx

from redline.errors import InputError, TargetBusy, TargetError, TargetPathError
from redline.targets.base import (
    RUN_ID_RE,
    HostInfo,
    Launch,
    PosixLocator,
    RunResult,
    ServerHandle,
    Target,
    WaitOutcome,
    check_argv,
    check_health_url,
)
from redline.targets.posix_scripts import (
    BUSY_EXIT,
    LAUNCH_SCRIPT,
    LISTENERS_SCRIPT,
    NO_CWD,
    PRIVATE_EXIT,
    RUN_SCRIPT,
    WRAP_SCRIPT,
    ProcStat,
    env_cwd_args,
    not_private,
    parse_gpus,
    parse_stats,
)

_DEAD = frozenset("ZXx")  # /proc states of a process that is gone


class PosixTarget(Target):
    """A target whose servers are process groups on one POSIX host, seen through /proc."""

    poll_s: float = 0.2  # how often stop() looks at the group
    kill_wait_s: float = 30.0  # after SIGKILL a process in D state can still take a while
    gpu_release_s: float = 120.0  # the driver frees memory after the process is gone
    resident_clients = True

    # ---- what each POSIX kind supplies --------------------------------------------

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
    async def _get(self, url: httpx.URL, timeout_s: float, body: str | None = None) -> str | None:
        """The body of a GET of url (with `body`: a POST of that JSON) made from the target host's point of view when
        it answers 200, else None."""

    async def _probe(self, url: httpx.URL, timeout_s: float) -> bool:
        return await self._get(url, timeout_s) is not None

    # ---- the interface ------------------------------------------------------------

    async def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60,
        server: ServerHandle | None = None,  # one host: every command runs on it
    ) -> RunResult:
        check_argv(argv)
        if env or cwd:
            argv = ["sh", "-c", RUN_SCRIPT, "sh", *env_cwd_args(env, cwd), *argv]
        result = await self._exec(argv, timeout_s)
        self._raise_no_cwd(result)
        return result

    async def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str | None,
        log_path: str,
        exclusive: bool = False,
        run_dir: str | None = None,
    ) -> ServerHandle:
        """Start argv detached in its own session (so it outlives redline); output appended to log_path.

        exclusive: refused (TargetBusy) while another exclusive server redline started here still runs.
        run_dir: a fresh folder from new_run_dir(), which the caller may have recorded before this call.
        """
        check_argv(argv)
        run_dir = self._check_run_dir(run_dir or self.new_run_dir())
        log = posixpath.join(run_dir, log_path)
        started_at = datetime.now(UTC).isoformat()
        args = [run_dir, log, WRAP_SCRIPT, self.workdir, "1" if exclusive else "0", *env_cwd_args(env, cwd), *argv]
        result = await self._exec(["sh", "-c", LAUNCH_SCRIPT, "sh", *args], 60)
        self._raise_no_cwd(result)
        self._raise_refused(result)
        if result.returncode != 0 or not result.stdout.strip().isdigit():
            raise TargetError(f"could not start {argv[0]} on {self.name}: {result.stderr.strip()}")
        pid = int(result.stdout)
        ticks = await self._confirm_leader(pid)  # the launcher wrote the same start time into run_dir/ticks
        return ServerHandle(
            target=self.name,
            run_dir=run_dir,
            log_path=log,
            started_at=started_at,
            locator=PosixLocator(pid=pid, pgid=pid, start_ticks=ticks),
        )

    async def launched(self, launch: Launch) -> ServerHandle | None:
        """The server a launch started, from the pid and start time its launcher wrote into the run folder."""
        if launch.target != self.name:
            raise InputError(f"this launch belongs to target {launch.target!r}, not {self.name!r}")
        run_dir = self._check_run_dir(launch.run_dir)
        try:
            pid = int((await self.read_text(posixpath.join(run_dir, "pid"))).strip())
        except (TargetPathError, ValueError):
            return None  # the launch never got as far as starting anything
        try:
            ticks: int | None = int((await self.read_text(posixpath.join(run_dir, "ticks"))).strip())
        except (TargetPathError, ValueError):
            ticks = None  # then stop() refuses to signal: the pid alone could name another group by now
        if pid <= 1:
            return None
        return ServerHandle(
            target=self.name,
            run_dir=run_dir,
            log_path=launch.log_path,
            started_at=launch.at,
            locator=PosixLocator(pid=pid, pgid=pid, start_ticks=ticks),
        )

    def _check_run_dir(self, run_dir: str) -> str:
        """A run folder of this target's own: <workdir>/runs/<a run id>, nothing else."""
        runs, name = posixpath.split(run_dir)
        if runs != posixpath.join(self.workdir, "runs") or not RUN_ID_RE.match(name):
            raise InputError(f"{run_dir!r} is not a run folder of target {self.name} ({self.workdir}/runs/<run id>)")
        return run_dir

    async def wait_ready(
        self, handle: ServerHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        """Poll health until it answers 200 (ready), the leader is gone (exited), or deadline_s passes."""
        self._locator(handle)
        url = check_health_url(health_url)
        t0 = time.monotonic()
        end = t0 + deadline_s
        while True:
            if await self._probe(url, max(0.2, min(5.0, end - time.monotonic()))):
                taken = await self._served_by_another(handle, url.port or 80)
                status = "taken" if taken else "ready"
                return WaitOutcome(status=status, detail=taken, elapsed_s=time.monotonic() - t0)
            if not await self.is_alive(handle):
                code = await self._exit_code(handle)
                return WaitOutcome(status="exited", exit_code=code, elapsed_s=time.monotonic() - t0)
            if time.monotonic() >= end:
                return WaitOutcome(status="timeout", elapsed_s=time.monotonic() - t0)
            await anyio.sleep(max(0.0, min(poll_s, end - time.monotonic())))

    async def http_text(
        self, handle: ServerHandle, url: str, *, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        self._locator(handle)
        return await self._get(check_health_url(url), timeout_s, body)

    async def is_alive(self, handle: ServerHandle) -> bool:
        """True while the group leader this handle names is running."""
        loc = self._locator(handle)
        stats = parse_stats(await self._read_stats(loc.pid))
        return any(_is_leader(s, loc) and _in_group(s, loc) for s in stats)

    async def stop(self, handle: ServerHandle, grace_s: float = 30.0) -> None:
        """SIGTERM the group, SIGKILL it after grace_s, wait until it and its GPU use are gone.

        A handle with no start time recorded is never used to signal: its pid may name another group by now.
        """
        loc = self._locator(handle)
        seen, left = await self._drain(loc, 0)
        if left and loc.start_ticks is None:
            raise TargetError(
                f"{handle.describe()} on {self.name} has no start time recorded, so redline cannot "
                f"tell it from a later group that reuses the pid; look at `ps -o pid,lstart,cmd -g "
                f"{loc.pgid}` and stop it by hand if it is the server"
            )
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, self.kill_wait_s)):
            if not left:
                break
            await self._signal_group(_safe_pgid(loc.pgid), sig)
            more, left = await self._drain(loc, wait_s)
            seen |= more
        if left:
            raise TargetError(
                f"process group {loc.pgid} on {self.name} still has pids {sorted(left)} "
                f"{self.kill_wait_s:.0f}s after SIGKILL; look at `ps -o pid,stat,cmd -g {loc.pgid}`"
            )
        await self._wait_gpu_release(seen | {loc.pid})

    async def host_info(self) -> HostInfo:
        """The hostname, the machine id where /etc/machine-id is readable, and the GPUs where nvidia-smi is."""
        uname = await self._exec(["uname", "-n"], 30)
        machine = await self._exec(["cat", "/etc/machine-id"], 30)
        csv = await self._nvidia_smi("--query-gpu=name,memory.total,uuid", "--format=csv,noheader,nounits")
        gpus = parse_gpus(csv or "")
        if gpus:  # what the driver keeps of each total (memory.reserved); an older nvidia-smi without it: unknown
            kept = await self._exec(["nvidia-smi", "--query-gpu=memory.reserved", "--format=csv,noheader,nounits"], 30)
            mibs = [line.strip() for line in kept.stdout.splitlines()] if kept.returncode == 0 else []
            if len(mibs) == len(gpus) and all(m.isdigit() for m in mibs):
                gpus = [g.model_copy(update={"reserved_mib": int(m)}) for g, m in zip(gpus, mibs, strict=True)]
        return HostInfo(
            hostname=uname.stdout.strip(),
            machine_id=(machine.returncode == 0 and machine.stdout.strip()) or None,
            gpus=gpus,
        )

    # ---- helpers ------------------------------------------------------------------

    async def _served_by_another(self, handle: ServerHandle, port: int) -> str | None:
        """Why the port's listener is not the handle's group (None when it is): the server that answers is ours."""
        loc = self._locator(handle)
        out = (await self._exec(["sh", "-c", LISTENERS_SCRIPT, "sh", str(port)], 30)).stdout
        pids = {int(p.split("/")[2]) for p in out.split() if p.startswith("/proc/") and p.split("/")[2].isdigit()}
        ours = await self._group_pids(loc)
        if pids & ours:
            return None
        if not pids and "inode" not in out:
            return None  # no listener seen at all (the probe went through a proxy or another namespace)
        who = f"pid {', '.join(map(str, sorted(pids)))}" if pids else "a process redline cannot see (another user's?)"
        return (
            f"port taken: port {port} on {self.name} is served by {who}, not by the server redline started "
            f"({handle.describe()}); stop that server or give this config another port"
        )

    def _locator(self, handle: ServerHandle) -> PosixLocator:
        """The process group a handle of this target names; a handle of another kind is refused."""
        self._check_handle(handle)
        if not isinstance(handle.locator, PosixLocator):
            raise InputError(f"{handle.describe()} is not a process group; target {self.name!r} cannot act on it")
        return handle.locator

    def _raise_refused(self, result: RunResult) -> None:
        """A launch the script refused: a work folder not the caller's alone, or a target busy with another server."""
        if result.returncode == PRIVATE_EXIT:
            raise TargetError(not_private(self.name, result.stderr))
        if result.returncode == BUSY_EXIT:
            busy, _, run = result.stderr.strip().partition(" ")
            raise TargetBusy(
                f"target {self.name} is busy: process group {busy} ({run.rstrip('/')}) that redline "
                "started there still runs, and one server at a time holds a target's GPU and port; "
                "stop it first (redline ladder stop, or job_cancel on its job)"
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

    async def _group_pids(self, loc: PosixLocator) -> set[int]:
        """Live (not zombie) pids of the group, or none if the pgid now names another group."""
        stats = parse_stats(await self._read_stats(None))
        ours = [s for s in stats if s.pid == loc.pid or s.pgid == loc.pgid]  # the leader's pid and the group's
        if any(s.pid == loc.pid and not _is_leader(s, loc) for s in ours):
            return set()
        return {s.pid for s in ours if _in_group(s, loc)}

    async def _drain(self, loc: PosixLocator, timeout_s: float) -> tuple[set[int], set[int]]:
        """Poll the group until it is empty or timeout_s passes: (every pid seen, pids left)."""
        seen: set[int] = set()
        end = time.monotonic() + timeout_s
        delay = 0.02  # most groups die within milliseconds of the signal: look soon, then back off
        while True:
            left = await self._group_pids(loc)
            seen |= left
            if not left or time.monotonic() >= end:
                return seen, left
            await anyio.sleep(min(delay, max(0.0, end - time.monotonic())))
            delay = min(delay * 2, self.poll_s)

    async def _exit_code(self, handle: ServerHandle) -> int | None:
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
            raise TargetError(f"nvidia-smi failed on {self.name} (exit {result.returncode}): {result.stderr.strip()}")
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


def _is_leader(stat: ProcStat, loc: PosixLocator) -> bool:
    """The process the handle started, not a later one that got its pid."""
    return stat.pid == loc.pid and loc.start_ticks in (None, stat.start_ticks)


def _in_group(stat: ProcStat, loc: PosixLocator) -> bool:
    """A live member of the handle's group, started no earlier than its leader."""
    return (
        stat.pgid == loc.pgid
        and stat.state not in _DEAD
        and (loc.start_ticks is None or stat.start_ticks >= loc.start_ticks)
    )


def _safe_pgid(pgid: int) -> int:
    """Never 0 or 1: `kill -- -1` would signal every process we may signal."""
    if pgid <= 1:
        raise TargetError(f"refusing to signal process group {pgid}")
    return pgid
