"""The measured boot: boot a serve config through a session, run its benches, stop it. The one loop that
campaign cells and A/B trials run (and a search's proposals); a ladder's smoke test runs its second half,
run_benches, on the server its rung left up.

    benches = boot_benches(spec.loads(), spec.warmup_requests, repeats=1)  # policy/workload.py
    measured = await measured_boot(session, config, benches, keep=Keep(server_file, index, write), ...)
    measured.warmup_error                # the warm-up's problem: no bench ran after it
    for result in measured.benches: ...  # one result per bench that ran, in order

The server's record is written as soon as it starts (and again, with where its boot ended in the log, once it
is ready), so a runner killed at any point leaves what the next run stops it by; the server is stopped and its
record cleared whatever happens, cancellation included. Steps run in order and stop at the first that leaves
the server unable to take the next one (a warm-up with any problem; a bench with no figures, or after which the
server did not answer its health check). Each bench's result file is kept through `keep.write` as it comes.

A server a killed run left on record is stopped by `stop_left_servers` (the campaign's cells, the A/B's trial, the
ladder's rung alike) before the next one boots; a ladder's rung, booted without the loop, is recorded by the same
`server_record`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio

from redline.errors import InputError
from redline.identity import this_owner
from redline.ledger.server_record import ServerRecord, check_reachable, clear_server, load_server, save_server
from redline.models import BenchResult, ServeConfig
from redline.models.clean_bench import BenchCheck
from redline.models.telemetry import GpuTelemetry
from redline.offload import off_loop
from redline.ops.session import BOOTED_AT, BenchRun, Boot, ServeSession, say
from redline.ops.telemetry import Sampling
from redline.policy import clean_bench, gpu_health
from redline.policy.telemetry import check as gpu_check
from redline.policy.workload import Bench
from redline.targets import ServerHandle, Target


@dataclass(frozen=True)
class BenchOutcome:
    """One bench as it ran: the client's run, its figures, why it did not measure what it asked (or None)."""

    bench: Bench
    run: BenchRun
    figures: BenchResult | None
    problem: str | None
    unreadable: str | None  # why the result file, present, could not be read
    warm: bool  # the server had served an earlier bench of this boot
    checks: list[BenchCheck] = field(default_factory=list)  # a ranked bench's clean-bench checks (a flag: problem)
    telemetry: GpuTelemetry | None = None  # the GPUs sampled beside a ranked bench, where the host has the tools

    @property
    def server_usable(self) -> bool:
        """The server can take the next bench: the bench measured something and the server still answers."""
        return self.figures is not None and self.run.healthy_after


@dataclass(frozen=True)
class MeasuredBoot:
    """A boot and the benches it ran; log_text is the server's whole log (boot, warm-up and benches)."""

    boot: Boot
    outcomes: list[BenchOutcome] = field(default_factory=list)
    log_text: str = ""

    @property
    def warmup_error(self) -> str | None:
        return next((r.problem for r in self.outcomes if r.bench.warmup), None)

    @property
    def benches(self) -> list[BenchOutcome]:
        return [r for r in self.outcomes if not r.bench.warmup]

    def command(self, name: str) -> list[str] | None:
        return next((r.run.argv for r in self.outcomes if r.bench.result_name == name), None)


@dataclass(frozen=True)
class Keep:
    """Where an operation keeps what its measured boot leaves: the server record, the result files."""

    server_file: Path
    index: int  # the rung, cell or trial the record names
    write: Callable[[str, str], object]  # (result name, text): the file beside the operation's other results
    base: Path | None = None  # the folder the record's derived folders are checked from before each write


def read_figures(
    session: ServeSession, run: BenchRun, slo: Mapping[str, float] | None = None
) -> tuple[BenchResult | None, str | None]:
    """The bench's figures, or why its result file cannot be read (None, None: it wrote none); `slo`: the per-request
    limits an open-loop bench's goodput is counted against."""
    if run.result_text is None:
        return None, None
    try:
        return session.engine.parse_bench_result(run.result_text, slo), None
    except InputError as exc:
        return None, str(exc)


def bench_problem(run: BenchRun, figures: BenchResult | None) -> str | None:
    """Why a bench did not measure what it asked, or None."""
    if figures is None:
        why = run.log_lines[-1] if run.log_lines else f"the bench exited {run.run.returncode}"
        return f"no result file ({why})"
    if not figures.all_completed:
        return f"{figures.failed} of {figures.num_prompts} requests failed (completed {figures.completed})"
    if not run.healthy_after:
        return "the server did not answer its health check after the bench"
    return None


async def run_benches(
    session: ServeSession,
    handle: ServerHandle,
    config: ServeConfig,
    benches: Sequence[Bench],
    *,
    deadline_s: float,
    write: Callable[[str, str], object] | None = None,
    since: int | None = None,
) -> list[BenchOutcome]:
    """Run the benches on the running server in order, up to the first that leaves it unable to take the next; the
    progress moves as each starts and as each ends.

    `since`: where in the log the first bench's lines start (default: the log's end when it starts).
    """
    results: list[BenchOutcome] = []
    for i, bench in enumerate(benches):
        await say(session.progress, BOOTED_AT + (1 - BOOTED_AT) * i / len(benches), bench.label)
        offset = since if i == 0 and since is not None else len((await session.read_log(handle)).encode())
        result = await run_bench(session, handle, config, bench, deadline_s=deadline_s, write=write, log_offset=offset)
        result = replace(result, warm=i > 0)
        results.append(result)
        done = BOOTED_AT + (1 - BOOTED_AT) * (i + 1) / len(benches)
        await say(session.progress, done, f"{bench.label}: {_said(result)}")
        if (bench.warmup and result.problem is not None) or not result.server_usable:
            break
    return results


async def run_bench(
    session: ServeSession,
    handle: ServerHandle,
    config: ServeConfig,
    bench: Bench,
    *,
    deadline_s: float,
    write: Callable[[str, str], object] | None,
    log_offset: int,
) -> BenchOutcome:
    """One bench on the running server; a ranked one from an emptied prefix cache where the engine serves that,
    checked clean (policy/clean_bench.py) with the GPUs sampled beside it."""
    reset = await session.empty_prefix_cache(handle, config) if bench.ranked else None
    before = await session.prefix_counters(handle, config)  # every step's, so the server's traffic is accounted
    sampling = await session.gpus.start(handle, bench.result_name, deadline_s) if bench.ranked else None
    run = await session.bench(
        handle,
        config,
        bench.workload,
        bench.result_name,
        deadline_s=deadline_s,
        log_offset=log_offset,
        replay=bench.replay,
    )
    if run.result_text is not None and write is not None:
        write(bench.result_name, run.result_text)
    telemetry, gpu_checks = await _telemetry(session, handle, sampling, write)
    figures, unreadable = read_figures(session, run, bench.slo)
    after = await session.prefix_counters(handle, config)
    prior = session.served.get(handle.run_dir, clean_bench.Served())
    tokens = figures.total_input_tokens if figures is not None else None
    now = session.served[handle.run_dir] = clean_bench.served_after(prior, before, after, bench.workload, tokens)
    found = []
    if bench.ranked and figures is not None:
        own = None if reset is not None and reset[0] else clean_bench.own_hits(prior, now, bench.workload)
        found = [*clean_bench.checks(figures, bench.workload, before, after, reset, own), *gpu_checks]
    problem = unreadable or bench_problem(run, figures) or clean_bench.flagged(found)
    return BenchOutcome(bench, run, figures, problem, unreadable, warm=False, checks=found, telemetry=telemetry)


def _said(result: BenchOutcome) -> str:
    """A bench as its progress line ends it."""
    figures = result.figures
    done = f"{figures.output_throughput:,.1f} output tok/s" if figures is not None else "no figures"
    return f"{done}; {result.problem}" if result.problem else done


async def _telemetry(
    session: ServeSession,
    handle: ServerHandle,
    sampling: Sampling | None,
    write: Callable[[str, str], object] | None,
) -> tuple[GpuTelemetry | None, list[BenchCheck]]:
    """A ranked bench's GPU telemetry (its samples kept beside its result) and its GPU check; nothing for a bench
    that sampled nothing (a warm-up)."""
    if sampling is None:
        return None, []
    found, kept, why = await session.gpus.stop(handle, sampling)
    if write is not None:
        for name, text in kept.items():
            write(name, text)
    util = found if found is not None and found.gpus else None
    util_why = why or "the sampler wrote no utilization sample it could read"
    health = found.health if found is not None else None
    health_why = (found.health_why if found is not None else None) or why
    return found, [gpu_check(util, util_why), gpu_health.check(health, health_why)]


# More benches on the same server once the listed ones ran, chosen from what they measured: (the server, the results
# so far) -> the results of the benches it ran (a campaign's load-boundary probes, ops/campaign/boundary.py).
Then = Callable[[ServerHandle, list[BenchOutcome]], Awaitable[list[BenchOutcome]]]


async def measured_boot(
    session: ServeSession,
    config: ServeConfig,
    benches: Sequence[Bench],
    *,
    keep: Keep,
    boot_deadline_s: float,
    bench_deadline_s: float,
    exclusive: bool = True,
    then: Then | None = None,
) -> MeasuredBoot:
    """Boot config, run the benches on it if it is ready (then `then`'s, while the server can take them), stop it; the
    server is stopped whatever happens."""
    started: list[ServerHandle] = []

    def record(handle: ServerHandle, log_bytes: int = 0) -> None:
        started[:] = [handle]
        save_server(keep.server_file, server_record(keep.index, session, config, handle, log_bytes), keep.base)

    async def on_start(handle: ServerHandle) -> None:
        record(handle)

    await say(session.progress, 0.0, "booting")
    try:
        boot = await session.boot(config, boot_deadline_s, on_start=on_start, exclusive=exclusive, benches=any(benches))
        if not boot.ready:
            return MeasuredBoot(boot, [], boot.log_text)
        record(boot.handle, len(boot.log_text.encode()))
        results = await run_benches(
            session, boot.handle, config, benches, deadline_s=bench_deadline_s, write=keep.write
        )
        if then is not None and len(results) == len(benches) and all(r.server_usable for r in results):
            results += await then(boot.handle, results)
        return MeasuredBoot(boot, results, await session.read_log(boot.handle))
    finally:
        with anyio.CancelScope(shield=True):  # cancelled or failed: no server is left running
            for handle in started:
                await session.stop(handle)
            clear_server(keep.server_file, keep.base)


def server_record(
    index: int, session: ServeSession, config: ServeConfig, handle: ServerHandle, log_bytes: int
) -> ServerRecord:
    """The record a running server is stopped by: the rung, cell or trial it is (`index`), its handle, its config,
    where its boot ended in its log, its owner."""
    return ServerRecord(
        rung_index=index,
        engine=session.engine.name,
        handle=handle,
        config=config,
        boot_log_bytes=log_bytes,
        owner=this_owner(),
    )


async def stop_left_servers(files: Sequence[Path], target: Target, what: str, base: Path | None = None) -> int:
    """Stop every server a killed run left recorded in `files` (those there are), each record cleared once its server
    is stopped, even while the caller is cancelled; how many there were. `what`: what a record's index numbers (rung,
    cell, trial); `base`: the folder each record's folders are checked from. Every record is checked to be one this
    redline can act on (ledger/server_record.py check_reachable) before any server is stopped."""
    left = [(path, record) for path in files if (record := await off_loop(load_server, path, base)) is not None]
    for path, record in left:
        check_reachable(record, target, what, path)
    with anyio.CancelScope(shield=True):
        for path, record in left:
            await target.stop(record.handle)
            await off_loop(clear_server, path, base)
    return len(left)


__all__ = [
    "BOOTED_AT",
    "Keep",
    "MeasuredBoot",
    "BenchOutcome",
    "Then",
    "bench_problem",
    "measured_boot",
    "read_figures",
    "run_benches",
    "server_record",
    "stop_left_servers",
]
