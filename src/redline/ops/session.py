"""A serve session: boot one ServeConfig on a Target with an Engine, wait until it is ready,
bench it at a workload, stop it. The one way any operation runs a server.

    session = ServeSession(target, get_engine(ladder.engine), progress)
    boot = await session.boot(config, deadline_s=1800)     # a failed boot leaves nothing running
    if boot.ready:
        run = await session.bench(boot, workload, "bench-c8.json", deadline_s=600)
        await session.stop(boot.handle)

A ready server is left running for the caller, who records its handle before
anything else can go wrong (ladders keep it up for their smoke test).
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio

from redline.engines import engine_names, get_engine
from redline.engines.base import Engine
from redline.errors import CommandTimeout, InputError, LogParseError, TargetPathError
from redline.models import BenchWorkload, BootSignals, BootStatus, ServeConfig, Widening
from redline.models.clean_bench import PrefixCounters
from redline.models.trace import TraceRow
from redline.offload import off_loop
from redline.ops.resident import Clients
from redline.ops.target_files import put_text
from redline.ops.telemetry import GpuSampler
from redline.policy.clean_bench import Served
from redline.targets import RunResult, ServerHandle, Target, WaitOutcome

Progress = Callable[[float, str], Awaitable[None]]
BOOT_POLL_S = 10.0  # how often a waiting boot reports progress
BOOTED_AT = 0.3  # the share of an operation's progress a boot takes where benches follow; they take the rest
BOOT_SHOWN = 0.9  # the most of its share a boot still waiting shows: the rest comes when it is ready
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})  # a server listening there is reached from its host alone
HEALTH_AFTER_BENCH_S = 10.0


def executables(target: Target) -> dict[str, list[str]]:
    """How the target runs each engine redline knows (a server, or the client that benches one), by name: what a
    plan's commands name (policy/workload.py commands_of), as a session runs them (`executable`,
    `bench_executable`)."""
    return {name: target.engine_command(name, list(get_engine(name).default_command)) for name in engine_names()}


@dataclass(frozen=True)
class Boot:
    """One boot as the target saw it and the log told it."""

    config: ServeConfig
    handle: ServerHandle
    outcome: WaitOutcome
    log_text: str
    signals: BootSignals
    widened: list[str]  # what of the server config's widening this boot used
    started_at: datetime
    ended_at: datetime
    boot_s: float

    @property
    def ready(self) -> bool:
        return self.outcome.status == "ready"


@dataclass(frozen=True)
class BenchRun:
    """One bench against a running server: how the client ended and what it wrote."""

    argv: list[str]
    run: RunResult
    result_path: str
    result_text: str | None  # None: the client wrote no result file; run.stderr says why
    healthy_after: bool
    log_lines: list[str]  # the server's error lines while the bench ran
    client: str  # which client ran it: its own, or the server's resident one (ops/resident.py Clients.said)


async def say(progress: Progress | None, fraction: float, text: str) -> None:
    if progress is not None:
        await progress(min(max(fraction, 0.0), 1.0), text)


def last_line(engine: Engine, log_text: str) -> str:
    """The log's last non-blank line, as the engine words it (without its process tag and time)."""
    lines = [line for line in log_text[-65536:].splitlines() if line.strip()]
    return engine.log_message(lines[-1])[:200] if lines else "(the log is empty)"


def boot_signals(
    engine: Engine, log_text: str, outcome: WaitOutcome, config: ServeConfig, deadline_s: float
) -> BootSignals:
    """The log's own verdict, corrected by what the target saw (a deadline, an exit, a port taken).

    A plain function of plain values, so a long log can be read in a worker process.
    """
    try:
        signals = engine.parse_boot_log(log_text)
    except LogParseError:
        reason = f"not a {engine.title} boot log: {last_line(engine, log_text)}"
        signals = BootSignals(engine=engine.name, status=BootStatus.CRASH_UNKNOWN, reason=reason)
    tail = f"; last log line: {last_line(engine, log_text)}"
    if outcome.status == "timeout":
        detail = f"no answer from {engine.health_url(config)} within {deadline_s:.0f}s"
        return signals.model_copy(update={"status": BootStatus.TIMEOUT_BOOT, "reason": detail + tail})
    if outcome.status == "taken":
        return signals.model_copy(update={"status": BootStatus.CRASH_ENV, "reason": str(outcome.detail)})
    if outcome.status == "exited" and signals.status in (BootStatus.BOOT_OK, BootStatus.BOOT_INCOMPLETE):
        detail = f"the server exited with code {outcome.exit_code} before it was ready"
        return signals.model_copy(update={"status": BootStatus.CRASH_UNKNOWN, "reason": detail + tail})
    return signals


class ServeSession:
    """Boots, benches and stops servers of one engine on one target."""

    def __init__(
        self,
        target: Target,
        engine: Engine,
        progress: Progress | None = None,
        widening: Widening | None = None,
    ) -> None:
        self.target = target
        self.engine = engine
        self.progress = progress
        self.widening = widening
        self.clients = Clients(target, get_engine(engine.bench_client), self.bench_executable)
        # how long a boot is expected to take, for its progress: the last ready boot this session saw (or one the
        # caller knows, a ladder's last rung); None: the deadline stands in
        self.expected_boot_s: float | None = None
        self.gpus = GpuSampler(target)  # GPU telemetry beside each ranked bench, where the host has the tools
        # what each running server (by its run folder) looked up in its prefix cache, as redline's steps account for it
        self.served: dict[str, Served] = {}

    @property
    def executable(self) -> list[str]:
        return self.target.engine_command(self.engine.name, list(self.engine.default_command))

    @property
    def bench_executable(self) -> list[str]:
        """How the target runs the bench client: the engine's own, or the one that benches it (SGLang: vLLM's)."""
        client = get_engine(self.engine.bench_client)
        return self.target.engine_command(client.name, list(client.default_command))

    def serve_argv(self, config: ServeConfig) -> list[str]:
        return self.engine.serve_argv(config, self.executable)

    def launch_env(self, config: ServeConfig, benches: bool = False) -> dict[str, str]:
        """The server's environment: the target's and the config's, and where ranked benches follow, what lets it
        empty its prefix cache between them (vLLM's dev mode) where the target allows that (docs/security.md, 38.1;
        the target's env wins)."""
        reset = self.engine.cache_reset_env if benches and self.control_off(config) is None else {}
        return {**reset, **self.target.engine_env, **config.env}

    def control_off(self, config: ServeConfig) -> str | None:
        """Why a server of config runs without the engine's control endpoints its prefix-cache reset needs (vLLM's
        dev mode), or None: it may have them. They are on only where the server's port is reachable by redline
        alone: a server listening on loopback, on a target whose port is not forwarded to a shared host (its kind's
        default, or the targets file's `dev_mode`)."""
        if not self.engine.cache_reset_env:
            return None
        if config.host not in LOOPBACK:
            return f"the server listens on {config.host}, where others can reach it"
        if not self.target.dev_mode:
            return (
                f"target {self.target.name}'s engine port is reached by others than redline (its kind's default; "
                "dev_mode: true in the targets file turns it on there, docs/security.md 38.1)"
            )
        return None

    async def submission_preview(self, config: ServeConfig) -> str | None:
        """What booting config for benches would submit to the target's cluster (exact commands and manifests)."""
        return await self.target.submission_preview(self.serve_argv(config), env=self.launch_env(config, True))

    def admit(self, config: ServeConfig) -> list[str]:
        """Refuse what the engine's allowlist and the target's own env forbid; the widenings used."""
        taken = sorted(set(config.env) & set(self.target.engine_env))
        if taken:
            raise InputError(
                f"the serve config sets {', '.join(taken)}, which target {self.target.name} sets itself "
                "(device visibility, offline mode and the like are the target's): the target's env wins; "
                "remove them from the serve config"
            )
        return self.engine.admit(config, self.widening)

    async def check_model_path(self, model: str, fix: str = "fix the model path") -> None:
        """A model given as a path must be there on the target (a hub id is the engine's to fetch)."""
        if model.startswith(("/", ".", "~")) and (await self.target.run(["test", "-e", model])).returncode != 0:
            raise InputError(
                f"model path {model} does not exist on target {self.target.name}: {fix}, or copy the model there"
            )

    async def boot(
        self,
        config: ServeConfig,
        deadline_s: float,
        on_start: Callable[[ServerHandle], Awaitable[None]] | None = None,
        *,
        exclusive: bool = True,
        benches: bool = False,
    ) -> Boot:
        """Start the engine, wait for health within deadline_s; anything but ready is stopped before returning.

        `on_start` gets the handle as soon as the server is started, before the (long) wait: a caller that
        records it there can find and stop the server even if its own process is killed mid-boot.
        `exclusive`: the only server on the target (False: one of several the caller runs at once).
        `benches`: benches follow a ready boot, so the resident bench client starts while the server boots.
        """
        widened = self.admit(config)
        argv, env = self.serve_argv(config), self.launch_env(config, benches)
        started = datetime.now(UTC)
        handle = await self.target.start(argv, env=env, cwd=None, log_path="boot.log", exclusive=exclusive)
        t0 = time.monotonic()
        try:
            if on_start is not None:
                await on_start(handle)
            outcome, ended, boot_s = await self._wait_beside_client(handle, config, deadline_s, t0, benches)
            if outcome.status == "ready":
                self.expected_boot_s = boot_s
                await say(self.progress, BOOTED_AT if benches else 1.0, f"ready after {boot_s:.0f}s")
            log_text = await self.target.read_text(handle.log_path)
        except BaseException:
            with anyio.CancelScope(shield=True):  # a cancelled or failed wait leaves nothing running
                await self.stop(handle)
            raise
        if outcome.status != "ready":
            await self.stop(handle)
        else:
            self.clients.booted.add(handle.run_dir)
        # a long log is parsed away from the event loop, so other calls and jobs keep going meanwhile
        signals = await off_loop(boot_signals, self.engine, log_text, outcome, config, deadline_s, size=len(log_text))
        return Boot(config, handle, outcome, log_text, signals, widened, started, ended, boot_s)

    async def _wait_beside_client(
        self, handle: ServerHandle, config: ServeConfig, deadline_s: float, t0: float, benches: bool
    ) -> tuple[WaitOutcome, datetime, float]:
        """The wait for health, with the resident bench client importing beside it where benches follow; the
        outcome, when it came and the server's boot time (not its client's import)."""
        async with anyio.create_task_group() as group:
            if benches:
                group.start_soon(self.clients.start, handle)
            outcome = await self._wait(handle, config, deadline_s, t0, BOOTED_AT if benches else 1.0)
            ended, boot_s = datetime.now(UTC), time.monotonic() - t0
            if outcome.status != "ready":
                group.cancel_scope.cancel()  # a client still importing for a server that failed: stopped
        return outcome, ended, boot_s

    async def _wait(
        self, handle: ServerHandle, config: ServeConfig, deadline_s: float, t0: float, share: float
    ) -> WaitOutcome:
        """The wait for health, its progress advancing through the boot's `share` of the operation against the boot
        time expected (never past BOOT_SHOWN of it while it waits)."""
        url, expected = self.engine.health_url(config), self.expected_boot_s
        while True:
            left = deadline_s - (time.monotonic() - t0)
            outcome = await self.target.wait_ready(handle, url, max(0.0, min(BOOT_POLL_S, left)))
            elapsed = time.monotonic() - t0
            if outcome.status != "timeout" or elapsed >= deadline_s:
                return outcome
            tail = self.last_line(await self.target.read_text(handle.log_path))
            fraction = share * min(elapsed / (expected or deadline_s), BOOT_SHOWN)
            took = f" (the last boot took {expected:.0f}s)" if expected else ""
            await say(self.progress, fraction, f"booting for {elapsed:.0f}s{took}: {tail}")

    def last_line(self, log_text: str) -> str:
        return last_line(self.engine, log_text)

    async def bench(
        self,
        handle: ServerHandle,
        config: ServeConfig,
        workload: BenchWorkload,
        result_name: str,
        *,
        deadline_s: float,
        log_offset: int = 0,
        replay: Sequence[TraceRow] | None = None,
    ) -> BenchRun:
        """Run the engine's bench client against the running server (a trace bench's requests, `replay`, written
        beside its result first, in the client's own format); a client past its deadline is exit 124."""
        argv = self.engine.bench_argv(
            config, workload, result_dir=handle.run_dir, result_filename=result_name, executable=self.bench_executable
        )
        if workload.trace_file is not None:
            dataset = self.engine.bench_dataset(workload, replay or ())
            await put_text(self.target, handle, posixpath.join(handle.run_dir, workload.trace_file), dataset)
        client = await self.clients.of(handle)
        if client is not None:  # the arguments after `<executable> bench serve`, to the one resident client
            run = await client.bench(argv[len(self.bench_executable) + 2 :], deadline_s)
        else:
            try:
                run = await self.target.run(argv, env=self.target.engine_env, timeout_s=deadline_s, server=handle)
            except CommandTimeout:
                why = f"the bench did not finish within {deadline_s:.0f}s"
                run = RunResult(returncode=124, stdout="", stderr=why)
        url = self.engine.health_url(config)
        healthy = (await self.target.wait_ready(handle, url, HEALTH_AFTER_BENCH_S)).status == "ready"
        log_tail = (await self.target.read_text(handle.log_path)).encode()[log_offset:].decode(errors="replace")
        path = posixpath.join(handle.run_dir, result_name)
        try:
            text: str | None = await self.target.read_text(path)
        except TargetPathError:  # no result file: the bench itself failed; its stderr says why
            text = None
        lines = self._error_lines(log_tail)
        if run.returncode != 0:
            lines.append(f"bench exited {run.returncode}: {self.last_line(run.stderr or run.stdout)}")
        return BenchRun(argv, run, path, text, healthy, lines, self.clients.said(client))

    def _error_lines(self, log_tail: str) -> list[str]:
        keep = ("ERROR", "Error", "Traceback", "out of memory", "Killed")
        lines = [self.engine.log_message(line)[:300] for line in log_tail.splitlines() if any(k in line for k in keep)]
        return lines[-20:]

    async def prefix_counters(self, handle: ServerHandle, config: ServeConfig) -> PrefixCounters | None:
        """The running server's prefix-cache counters, from its metrics; None where the engine or the server
        gives none."""
        url = self.engine.metrics_url(config)
        text = await self.target.http_text(handle, url) if url is not None else None
        return self.engine.prefix_cache_counters(text) if text is not None else None

    async def empty_prefix_cache(self, handle: ServerHandle, config: ServeConfig) -> tuple[bool, str]:
        """Empty the running server's prefix cache before a ranked bench, where the engine serves that: whether it
        was emptied, and how (or why not), as the bench's record says it."""
        url = self.engine.cache_reset_url(config)
        if url is None:
            return False, f"{self.engine.title} serves no prefix-cache reset"
        needs = ", ".join(f"{k}={v}" for k, v in self.engine.cache_reset_env.items())
        env = self.launch_env(config, True)
        if any(env.get(k) != v for k, v in self.engine.cache_reset_env.items()):  # never POSTed: it would not serve it
            why = self.control_off(config) or "the target's env sets it otherwise"
            return False, f"not emptied before the bench ({needs} is off: {why})"
        answer = await self.target.http_text(handle, url, body="{}")
        if answer is not None and self.engine.cache_reset_done(answer):
            return True, f"emptied just before the bench (POST {url})"
        said = "no 200 answer" if answer is None else f"answered {' '.join(answer.split())[:80]!r}"
        why = f"; {self.engine.title} serves it only with {needs}, which redline set" if needs else ""
        return False, f"not emptied before the bench (POST {url}: {said}{why})"

    async def read_log(self, handle: ServerHandle) -> str:
        """The server's whole log so far: its boot, and every bench since."""
        return await self.target.read_text(handle.log_path)

    async def stop(self, handle: ServerHandle) -> None:
        """Stop the server, and the resident bench client of it where one was started."""
        await self.clients.close(handle)
        await self.target.stop(handle)
