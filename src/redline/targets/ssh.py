"""The SSH target: one asyncssh connection per target, host keys always verified.

    targets:
      gpu1: {kind: ssh, host: 10.0.0.5, port: 22, user: ubuntu,
             key_file: ~/.ssh/id_ed25519, known_hosts: ~/.ssh/known_hosts, workdir: /tmp/redline}

Every command crosses the SSH boundary as `shlex.join(argv)`, the only place a
string is built; the remote login shell must therefore be POSIX (sh, bash, zsh).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import stat
import time
import warnings
from pathlib import Path
from typing import Any, Literal, Self

import anyio
import httpx
from pydantic import Field, field_validator, model_validator

from redline.errors import (
    CommandTimeout,
    HostKeyRejected,
    InputError,
    TargetAuthRejected,
    TargetConfigError,
    TargetPathError,
    TargetUnreachable,
)
from redline.targets.base import MAX_TARGET_TEXT, RunResult, within
from redline.targets.port_reads import read_body
from redline.targets.posix import PosixTarget
from redline.targets.spec import BaseSpec, abspath

with warnings.catch_warnings():  # cryptography 51 warns at asyncssh's import that DSA is deprecated: redline
    warnings.simplefilter("ignore")  # offers no DSA key, and the CLI's error stays one line on stderr
    import asyncssh


class SSHSpec(BaseSpec):
    """A host reached over SSH; its key must already be in known_hosts."""

    kind: Literal["ssh"]
    host: str = Field(min_length=1, pattern=r"^[^-\s]")
    port: int = Field(22, ge=1, le=65535)
    user: str = Field(min_length=1, pattern=r"^[^-\s]")
    key_file: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    workdir: str = "/tmp/redline"  # never used as such: _own_workdir names the user
    connect_timeout_s: float = Field(10.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _own_workdir(cls, data: Any) -> Any:
        """Without a workdir, the user's own on the remote host, /tmp/redline-<user>: made 0700 at the first start,
        and refused if another user made it (posix_scripts.PRIVATE)."""
        if isinstance(data, dict) and data.get("workdir") is None and isinstance(data.get("user"), str):
            data = {**data, "workdir": f"/tmp/redline-{own_name(data['user'])}"}
        return data

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must be an absolute path on the remote host")
        return value

    def resolved(self, base: Path) -> Self:
        # Engine commands are paths on the remote host: only the local key files move.
        update = {"known_hosts": abspath(self.known_hosts, base)}
        if self.key_file:
            update["key_file"] = abspath(self.key_file, base)
        return self.model_copy(update=update)


def own_name(user: str) -> str:
    """A user's name as one part of a folder's name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", user)[:64]


def from_spec(name: str, spec: SSHSpec) -> SSHTarget:
    return SSHTarget(name, spec)


class SSHTarget(PosixTarget):
    """A host reached over SSH. Connects on first use; reconnects if the connection dropped."""

    def __init__(self, name: str, spec: SSHSpec) -> None:
        super().__init__(name, spec.workdir, **spec.engine_settings())
        self.spec = spec
        self.connect_count = 0  # how many SSH connections this target has opened
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = anyio.Lock()
        self._forwards: dict[tuple[str, int], asyncssh.SSHListener] = {}
        self._http: httpx.AsyncClient | None = None

    @property
    def address(self) -> str:
        return f"{self.spec.host}:{self.spec.port}"

    # ---- connection ----------------------------------------------------------------

    async def _connection(self) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._conn is None or self._conn.is_closed():
                self._forwards.clear()  # listeners die with their connection
                self._conn = await self._connect()
                self.connect_count += 1
            return self._conn

    async def _connect(self) -> asyncssh.SSHClientConnection:
        spec = self.spec
        self._check_files()
        try:
            return await asyncssh.connect(
                spec.host,
                spec.port,
                username=spec.user,
                known_hosts=spec.known_hosts,  # never None: an unverified host gets no command
                client_keys=[spec.key_file] if spec.key_file else (),
                config=None,  # the targets file is the whole truth, not ~/.ssh/config
                connect_timeout=spec.connect_timeout_s,
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyRejected(
                f"the host key of {self.address} (target {self.name!r}) is not in, or does not match, "
                f"{spec.known_hosts}; check its fingerprint, then add it "
                f"(ssh-keyscan -p {spec.port} {spec.host} >> {spec.known_hosts})"
            ) from exc
        except asyncssh.PermissionDenied as exc:
            raise TargetAuthRejected(
                f"{self.address} refused user {spec.user!r} with key {spec.key_file or '(default keys)'}; "
                "add the public key to that user's authorized_keys"
            ) from exc
        except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
            raise TargetConfigError(f"cannot load key file {spec.key_file}: {exc}") from exc
        except (asyncssh.Error, OSError) as exc:
            raise self._unreachable(exc) from exc

    def _check_files(self) -> None:
        if not os.path.isfile(self.spec.known_hosts):
            raise HostKeyRejected(
                f"known_hosts file {self.spec.known_hosts} for {self.address} does not exist; "
                "no host key can be verified without it"
            )
        if self.spec.key_file and not os.path.isfile(self.spec.key_file):
            raise TargetConfigError(f"key file {self.spec.key_file} for target {self.name!r} does not exist")

    def _unreachable(self, exc: BaseException) -> TargetUnreachable:
        if isinstance(exc, OSError) and exc.errno:
            reason = os.strerror(exc.errno)
        else:
            reason = str(exc) or type(exc).__name__
        return TargetUnreachable(f"cannot reach {self.address} (target {self.name!r}): {reason}")

    # ---- primitives ----------------------------------------------------------------

    async def _exec(self, argv: list[str], timeout_s: float) -> RunResult:
        conn = await self._connection()
        # sshd neither kills a command when its channel closes nor honours signal
        # requests, so the remote coreutils `timeout` enforces the limit (TERM, then KILL).
        remote = ["timeout", "-k", "5", f"{timeout_s:g}", *argv]
        t0 = time.monotonic()
        try:
            done = await conn.run(
                shlex.join(remote),
                check=False,
                timeout=timeout_s + 15,
                stdin=asyncssh.DEVNULL,
                encoding="utf-8",
                errors="replace",
            )
        except asyncssh.TimeoutError as exc:
            raise CommandTimeout(f"{argv[0]} did not answer within {timeout_s}s on {self.name}") from exc
        except (asyncssh.Error, OSError) as exc:
            raise self._unreachable(exc) from exc
        code = done.returncode if done.returncode is not None else -1
        if code in (124, 137) and time.monotonic() - t0 >= timeout_s:
            raise CommandTimeout(f"{argv[0]} did not finish within {timeout_s}s on {self.name}")
        return RunResult(returncode=code, stdout=str(done.stdout or ""), stderr=str(done.stderr or ""))

    async def _read_stats(self, pid: int | None) -> str:
        if pid is not None:
            return (await self._exec(["cat", f"/proc/{pid}/stat"], 30)).stdout
        return (await self._exec(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; exit 0"], 30)).stdout

    async def _signal_group(self, pgid: int, sig: signal.Signals) -> None:
        # sh's builtin kill, so a host without procps can still stop its servers;
        # `-s NAME --` is the one spelling that dash's and bash's builtins both take.
        name = sig.name.removeprefix("SIG")
        await self._exec(["sh", "-c", 'kill -s "$1" -- "-$2"', "sh", name, str(pgid)], 30)

    async def _get(self, url: httpx.URL, timeout_s: float, body: str | None = None) -> str | None:
        # A local port forwarded through the SSH connection, not a remote curl: the GET
        # leaves from the remote host (its 127.0.0.1 is the server's), needs no curl or
        # python there, starts no remote process per poll, and is the same httpx code
        # as the local target.
        if url.scheme != "http":
            raise InputError(f"an SSH target polls health over http only, got {url}")
        port = await self._forward(url.host, url.port or 80)
        if self._http is None:
            self._http = httpx.AsyncClient(trust_env=False)
        local = url.copy_with(host="127.0.0.1", port=port)
        try:
            return await read_body(self._http, local, timeout_s, body, Host=url.netloc.decode())
        except httpx.HTTPError:
            return None

    async def _forward(self, host: str, port: int) -> int:
        conn = await self._connection()
        listener = self._forwards.get((host, port))
        if listener is None:
            try:
                listener = await conn.forward_local_port("127.0.0.1", 0, host, port)
            except (asyncssh.Error, OSError) as exc:
                raise self._unreachable(exc) from exc
            self._forwards[(host, port)] = listener
        return listener.get_port()

    async def read_text(self, path: str, max_bytes: int = MAX_TARGET_TEXT) -> str:
        """A plain file's text, at most max_bytes of it: a FIFO or a device there is refused, never read."""
        conn = await self._connection()
        try:
            async with conn.start_sftp_client() as sftp:
                if not stat.S_ISREG((await sftp.stat(path)).permissions or 0):
                    raise TargetPathError(f"{path} on {self.name} is not a regular file: redline reads plain files")
                async with sftp.open(path, "rb") as f:
                    data = await f.read(max_bytes + 1)
        except asyncssh.SFTPError as exc:
            raise TargetPathError(f"cannot read {path} on {self.name}: {exc.reason}") from exc
        except (asyncssh.Error, OSError) as exc:
            raise self._unreachable(exc) from exc
        assert isinstance(data, bytes)  # opened "rb"
        return within(data, max_bytes, f"{path} on {self.name}")

    async def fetch(self, remote_path: str, local_path: str) -> None:
        conn = await self._connection()
        try:
            Path(local_path).parent.mkdir(parents=True, exist_ok=True)
            async with conn.start_sftp_client() as sftp:
                await sftp.get(remote_path, local_path)
        except asyncssh.SFTPError as exc:
            raise TargetPathError(f"cannot fetch {remote_path} from {self.name}: {exc.reason}") from exc
        except OSError as exc:
            raise TargetPathError(f"cannot write {local_path}: {exc.strerror or exc}") from exc
        except asyncssh.Error as exc:
            raise self._unreachable(exc) from exc

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        for listener in self._forwards.values():
            listener.close()
        self._forwards.clear()
        if self._conn is not None:
            self._conn.close()
            await self._conn.wait_closed()
            self._conn = None
