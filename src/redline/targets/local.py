"""The local target: this host, through asyncio subprocesses. Its run folders are under its workdir (default: this
user's own, default_workdir), which must be the caller's alone (posix_scripts.PRIVATE).

targets:
  here: {kind: local, workdir: runs, engine_commands: {NAME: [.venv/bin/NAME]}, env: {KEY: value}}
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import tempfile
from pathlib import Path
from typing import Literal, Self, Unpack

import anyio
import httpx

from redline.errors import CommandTimeout, TargetPathError
from redline.targets.base import MAX_TARGET_TEXT, EngineSettings, RunResult
from redline.targets.port_reads import read_body
from redline.targets.posix import PosixTarget
from redline.targets.spec import BaseSpec, abspath
from redline.untrusted import read_regular


class LocalSpec(BaseSpec):
    """This host."""

    kind: Literal["local"]
    workdir: str | None = None

    def resolved(self, base: Path) -> Self:
        # A local engine path like .venv/bin/serve travels with the targets file; a bare name stays on PATH.
        def program(command: list[str]) -> list[str]:
            first, *rest = command
            return [abspath(first, base) if "/" in first else first, *rest]

        return self.model_copy(
            update={
                "workdir": self.workdir and abspath(self.workdir, base),
                "engine_command": self.engine_command and program(self.engine_command),
                "engine_commands": {name: program(c) for name, c in self.engine_commands.items()},
            }
        )


def default_workdir() -> Path:
    """This user's own work folder: redline in $XDG_RUNTIME_DIR where that is a folder only this user may use, else
    redline-<uid> in the temporary folder (made 0700 at the first start, refused there if another user made it)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    try:
        info = os.stat(runtime) if runtime.startswith("/") else None
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077:
        return Path(runtime) / "redline"
    return Path(tempfile.gettempdir()) / f"redline-{os.geteuid()}"


def from_spec(name: str, spec: LocalSpec) -> LocalTarget:
    return LocalTarget(name, workdir=spec.workdir, **spec.engine_settings())


class LocalTarget(PosixTarget):
    """Runs on this host. start() detaches, so a server outlives the redline that started it."""

    same_host_as_redline = True  # its handles name processes of the machine and PID namespace redline runs in
    dev_mode_default = True  # its servers listen on this host's loopback, where redline reaches them directly

    def __init__(self, name: str = "local", *, workdir: str | None = None, **engines: Unpack[EngineSettings]) -> None:
        super().__init__(name, str(Path(workdir or default_workdir()).expanduser().resolve()), **engines)
        self._http: httpx.AsyncClient | None = None

    async def _exec(self, argv: list[str], timeout_s: float) -> RunResult:
        try:
            # Own session, so a timeout kills whatever the command forked too.
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            return RunResult(returncode=127, stdout="", stderr=f"{argv[0]}: command not found")
        except PermissionError as exc:
            return RunResult(returncode=126, stdout="", stderr=f"{argv[0]}: {exc.strerror}")
        try:
            with anyio.fail_after(timeout_s):
                out, err = await proc.communicate()
        except BaseException as exc:
            _killpg(proc.pid, signal.SIGKILL)  # timed out or cancelled: leave nothing behind
            with anyio.CancelScope(shield=True):
                await proc.wait()
            if isinstance(exc, TimeoutError):
                raise CommandTimeout(f"{argv[0]} did not finish within {timeout_s}s on {self.name}") from exc
            raise
        return RunResult(
            returncode=proc.returncode if proc.returncode is not None else -1,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
        )

    async def _read_stats(self, pid: int | None) -> str:
        if pid is not None:
            return _read_stat(f"/proc/{pid}/stat")
        return "".join([_read_stat(f"/proc/{n}/stat") for n in os.listdir("/proc") if n.isdigit()])

    async def _signal_group(self, pgid: int, sig: signal.Signals) -> None:
        _killpg(pgid, sig)

    async def _get(self, url: httpx.URL, timeout_s: float, body: str | None = None) -> str | None:
        if self._http is None:
            self._http = httpx.AsyncClient(trust_env=False)  # no proxy between us and localhost
        try:
            return await read_body(self._http, url, timeout_s, body)
        except httpx.HTTPError:
            return None

    async def read_text(self, path: str, max_bytes: int = MAX_TARGET_TEXT) -> str:
        """A plain file's text, read in a thread; a FIFO or device is refused at once, never waited on."""
        try:
            return await anyio.to_thread.run_sync(read_regular, Path(path), max_bytes, path, TargetPathError)
        except OSError as exc:
            raise TargetPathError(f"cannot read {path} on {self.name}: {exc.strerror or exc}") from exc

    async def fetch(self, remote_path: str, local_path: str) -> None:
        try:
            Path(local_path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(remote_path, local_path)
        except OSError as exc:
            raise TargetPathError(
                f"cannot copy {remote_path} to {local_path} on {self.name}: {exc.strerror or exc}"
            ) from exc

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def _read_stat(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""  # the process is gone (or was never there)


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: stop() is idempotent
        os.killpg(pgid, sig)
