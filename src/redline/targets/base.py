"""The one interface every target implements, the handle it returns, and the small shapes it speaks.

A target starts servers, runs short commands and reads files on one host (or
one cluster). How it does that is its kind's business: posix.py holds the
process-group logic that local.py and ssh.py share; the Kubernetes target
names its servers by pod, not by pid, which is why a handle carries a `locator`
of its own kind instead of a pid.
"""

from __future__ import annotations

import abc
import posixpath
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Annotated, Any, Literal, Self, TypedDict

import httpx
from pydantic import BaseModel, ConfigDict, Field, model_validator

from redline.errors import InputError, TargetPathError

# ---- the handle ----------------------------------------------------------------------


class PosixLocator(BaseModel):
    """A server as a POSIX process group: found again by pid, told apart from a pid reuse by start_ticks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["posix"] = "posix"
    pid: int = Field(gt=1)
    pgid: int = Field(gt=1)
    # The leader's /proc starttime: tells our group apart from a later one that reuses the pid.
    start_ticks: int | None = None

    def describe(self) -> str:
        return f"process group {self.pgid}"


class PodLocator(BaseModel):
    """A server as a Kubernetes pod (targets/kubernetes.py): found again by its run label in its namespace.

    pod is the name it had at start (a chart's controller may replace it; the run label still finds it);
    release names the Helm release that made it, if one did.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["pod"] = "pod"
    namespace: str = Field(min_length=1, max_length=63)
    pod: str = Field(min_length=1, max_length=253)
    run_id: str = Field(pattern=r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")
    experiment: str | None = Field(None, max_length=63)
    release: str | None = Field(None, max_length=53)

    def describe(self) -> str:
        release = f" (helm release {self.release})" if self.release else ""
        return f"pod {self.namespace}/{self.pod}{release}"


class SlurmLocator(BaseModel):
    """A server as a Slurm job (targets/slurm.py), or as a job step of a held allocation: found again by its id,
    and told apart from anyone else's job by its name (which ends with the run id) and its comment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["slurm"] = "slurm"
    job_id: str = Field(pattern=r"^\d{1,20}$")
    step: str | None = Field(None, pattern=r"^\d{1,10}$")
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._-]+$")
    run_id: str = Field(pattern=r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")
    node: str | None = Field(None, max_length=255)  # known at start for a step: its allocation's node

    @property
    def id(self) -> str:
        """What scancel, sacct and srun take: `1234`, or `1234.5` for a step."""
        return f"{self.job_id}.{self.step}" if self.step is not None else self.job_id

    def describe(self) -> str:
        if self.step is not None:
            return f"Slurm job step {self.id} (in held allocation {self.job_id})"
        return f"Slurm job {self.job_id}"


# A new kind of target adds its locator here.
Locator = Annotated[PosixLocator | PodLocator | SlurmLocator, Field(discriminator="kind")]

_FLAT_LOCATOR_KEYS = ("pid", "pgid", "start_ticks")


class ServerHandle(BaseModel):
    """One server a target started; saved in job files and server records, found again after a restart."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    run_dir: str
    log_path: str
    started_at: str
    locator: Locator

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """Read the released flat shape ({target, pid, pgid, start_ticks, ...}) that old job files hold."""
        if isinstance(data, dict) and "locator" not in data and "pid" in data:
            data = dict(data)
            flat = {key: data.pop(key) for key in _FLAT_LOCATOR_KEYS if key in data}
            data["locator"] = {"kind": "posix", **flat}
        return data

    def describe(self) -> str:
        """What the server is, in words for messages: `process group 1234`."""
        return self.locator.describe()


class Launch(BaseModel):
    """A server about to be started: its run folder, named before the launch and written in the job's record,
    so a launch that a kill or a cancel splits from its handle can still be found (`Target.launched`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    run_dir: str
    log_path: str
    at: str

    def describe(self) -> str:
        return f"the server launched in {self.run_dir}"


# ---- the small shapes ----------------------------------------------------------------


class RunResult(BaseModel):
    """What a short command printed and how it ended (negative: killed by that signal)."""

    returncode: int
    stdout: str
    stderr: str


class GpuInfo(BaseModel):
    """One GPU as nvidia-smi names it; uuid tells two cards of one model apart."""

    name: str
    memory_mib: int
    uuid: str | None = None
    reserved_mib: int | None = None  # nvidia-smi's memory.reserved: what the driver keeps of memory_mib


class HostInfo(BaseModel):
    """The host a target runs on; gpus is empty where there is no nvidia-smi.

    machine_id (/etc/machine-id) names the node itself, so two runs can tell whether they shared it.
    """

    hostname: str
    machine_id: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)

    @property
    def gpu_uuids(self) -> list[str]:
        return [g.uuid for g in self.gpus if g.uuid]


class WaitOutcome(BaseModel):
    """How waiting for a server's health ended, and after how long."""

    status: Literal["ready", "exited", "timeout", "taken"]  # taken: another process answers on the port
    exit_code: int | None = None
    elapsed_s: float
    detail: str | None = None


class EngineSettings(TypedDict, total=False):
    """How a host runs engines, as a targets file says (see Target.engine_command)."""

    engine_env: Mapping[str, str]
    engine_commands: Mapping[str, Sequence[str]]
    engine_command: Sequence[str] | None
    dev_mode: bool | None  # the engine's control endpoints for its benches (docs/security.md, 38.1); None: the kind's
    compile_cache_persists: bool


# ---- shared checks -------------------------------------------------------------------

_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_argv(argv: list[str]) -> None:
    """Refuse what cannot be an argv: empty, non-strings, NUL bytes."""
    if not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
        raise InputError(f"argv must be a non-empty list of strings without NUL bytes, got {argv!r}")


def check_env(env: dict[str, str]) -> None:
    """Refuse environment names a shell could misread, and NUL bytes in values."""
    bad = [k for k, v in env.items() if not _ENV_KEY.match(k) or "\0" in v]
    if bad:
        raise InputError(f"environment names must look like NAME_1 (letters, digits, _): {bad!r}")


MAX_TARGET_TEXT = 1 << 30  # a boot log past 1 GiB is not a log redline can use


def within(data: bytes, max_bytes: int, what: str) -> str:
    """The text of a file's bytes (undecodable ones replaced), or TargetPathError where they are over max_bytes."""
    if len(data) > max_bytes:
        raise TargetPathError(f"{what} is over the {max_bytes >> 20} MiB redline reads")
    return data.decode(errors="replace")


def check_health_url(url: str) -> httpx.URL:
    """An http(s) URL with a host, or InputError."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InputError(f"health URL {url!r} is not a URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InputError(f"health URL must be http(s)://HOST:PORT/PATH, got {url!r}")
    return parsed


def new_run_id() -> str:
    """A sortable, unique folder name for one run."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(4)


RUN_ID_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")
NO_EXPERIMENT = "adhoc"  # what a server started outside a ladder, campaign or A/B is filed under


# ---- the interface -------------------------------------------------------------------


class Target(abc.ABC):
    """Where servers and commands run. stop() acts on the server a handle names, and only on it."""

    # True where a handle names a process of the machine (and PID namespace) redline itself runs in: `local`.
    # A handle recorded by a redline elsewhere then names nothing this one may signal.
    same_host_as_redline: bool = False
    # The ladder, campaign or A/B this target's servers are for, where the caller names it: a kind that
    # labels what it starts (kubernetes) files them under it; the others ignore it.
    experiment: str | None = None
    # How many servers this target can run at once: a POSIX host runs one engine at a time (it holds the
    # host's GPUs and port); a kind that gives each server resources of its own (a pod) runs more.
    max_servers: int = 1
    # True where a start submits work to a cluster others share (kubernetes): a boot there needs the
    # caller's acknowledgement, as every campaign and A/B does anywhere.
    submits_jobs: bool = False
    # True where start() can run a bench client of its own beside a server, on the host whose files and network the
    # benches share (a POSIX host): its benches then go to one resident client (ops/resident.py), not one each.
    resident_clients: bool = False
    # Set for a dry run: such a target may read what exists and must create nothing.
    dry_run: bool = False
    # Whether a server whose benches follow may run with the engine's control endpoints on (vLLM's dev mode, to empty
    # its prefix cache between benches), where the targets file does not say: only where its port is reachable by
    # redline alone (docs/security.md, 38.1). `local` says yes (its servers listen on this host's loopback); a kind
    # whose port is forwarded to redline's host or listens on a shared node says no.
    dev_mode_default: bool = False

    def __init__(
        self,
        name: str,
        workdir: str,
        *,
        engine_env: Mapping[str, str] | None = None,
        engine_commands: Mapping[str, Sequence[str]] | None = None,
        engine_command: Sequence[str] | None = None,
        dev_mode: bool | None = None,
        compile_cache_persists: bool = False,
    ) -> None:
        self.name = name
        self.dev_mode = self.dev_mode_default if dev_mode is None else dev_mode
        self.workdir = workdir
        # Whether a deployment here keeps the engine's torch.compile cache between boots (the targets file says):
        # a ladder then proves its ceiling with the cache warm; else cold, as a fresh deployment boots.
        self.compile_cache_persists = compile_cache_persists
        self.engine_env: dict[str, str] = dict(engine_env or {})  # what every engine command gets here
        self.engine_commands: dict[str, list[str]] = {k: list(v) for k, v in (engine_commands or {}).items()}
        # The older one-command form of the targets file: it stands for whichever engine the caller runs.
        self.fallback_engine_command: list[str] | None = list(engine_command) if engine_command else None

    def engine_command(self, engine_name: str, default: list[str]) -> list[str]:
        """The command that runs engine_name on this host: the targets file's, else the engine's default."""
        command = self.engine_commands.get(engine_name) or self.fallback_engine_command or default
        return list(command)

    def new_run_dir(self) -> str:
        """A fresh run folder for start(run_dir=...): named first, so the caller can record it before the launch."""
        return posixpath.join(self.workdir, "runs", new_run_id())

    @abc.abstractmethod
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
        """Start argv detached, its output appended to log_path (relative: inside the run's own folder).

        exclusive (an engine: it holds the GPU and a port): TargetBusy while another exclusive server
        redline started on this target still runs. run_dir: from new_run_dir(), else a fresh one.
        """

    @abc.abstractmethod
    async def launched(self, launch: Launch) -> ServerHandle | None:
        """The server a launch started, found by its run folder alone; None when the launch started nothing."""

    @abc.abstractmethod
    async def wait_ready(
        self, handle: ServerHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        """Poll health until it answers 200 (ready), the server is gone (exited), or deadline_s passes."""

    @abc.abstractmethod
    async def http_text(
        self, handle: ServerHandle, url: str, *, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        """The body of a GET of url (a server's metrics) made where the server's benches run, if it answers 200
        within timeout_s; None otherwise. At most MAX_URL_TEXT characters. With `body`, a POST of that JSON (the
        accuracy gate's prompts to the server's own API)."""

    @abc.abstractmethod
    async def is_alive(self, handle: ServerHandle) -> bool:
        """True while the server this handle names is running."""

    @abc.abstractmethod
    async def stop(self, handle: ServerHandle, grace_s: float = 30.0) -> None:
        """Stop the server (gently, then after grace_s by force) and wait until its resources are free."""

    @abc.abstractmethod
    async def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60,
        server: ServerHandle | None = None,
    ) -> RunResult:
        """Run a short command to completion; env is added to the host's environment.

        `server`: the server the command serves (a bench of it), as redline started it: a target that runs each
        server in a place of its own (a pod) runs the command there, and anything else in its common place. Never
        chosen from the argv, whose paths a tool argument may have named.
        """

    @abc.abstractmethod
    async def read_text(self, path: str, max_bytes: int = MAX_TARGET_TEXT) -> str:
        """The text of a file on the target (undecodable bytes replaced); TargetPathError for a file over max_bytes
        or one that is not a regular file (a FIFO or a device is never waited on or read without end)."""

    @abc.abstractmethod
    async def fetch(self, remote_path: str, local_path: str) -> None:
        """Copy a file from the target to local_path on this machine."""

    async def submission_preview(self, argv: list[str], *, env: dict[str, str]) -> str | None:
        """What a start of argv would submit, where a start submits to a cluster: the exact commands and
        documents, submitting nothing. None where the argv itself is all a start runs (a POSIX host)."""
        return None

    @abc.abstractmethod
    async def host_info(self) -> HostInfo:
        """The host's name and identity, and its GPUs."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections; servers started stay running."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _check_handle(self, handle: ServerHandle) -> None:
        """A handle is only ever acted on by the target that made it."""
        if handle.target != self.name:
            raise InputError(
                f"this handle belongs to target {handle.target!r}, not {self.name!r}; "
                f"open {handle.target!r} to act on it"
            )
