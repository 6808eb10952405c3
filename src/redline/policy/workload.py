"""The one workload policy every measured boot follows: how many prompts a concurrency sends, the seeds, the
warm-up. Campaign cells and A/B trials read it alike, so the two cannot drift. No I/O.

    steps = boot_benches(spec.loads(), spec.warmup_requests, repeats=1)
    n, note = prompts_at(spec.workload.num_prompts, c)     # never under 2 x c; the note says when it was raised

The steps are what a measured boot runs on one server (ops/measured_boot.py) and what a plan shows as
commands (`commands_of`: a campaign cell's and an A/B arm's alike): one list serves both, so a dry run shows
exactly what a run sends.

    commands = commands_of(engine, config, steps, executables)   # the boot, the warm-up, each bench step

The gates (METHODOLOGY.md, "Campaigns", 8 and 9): every concurrency sends at least 2 x c prompts, so its window
is not all ramp and drain; a count asked below that is raised and the plan says so. A rate sends RATE_WINDOW_S
seconds of arrivals by default (never under MIN_RATE_PROMPTS prompts, so its send rate can be told). max_num_seqs is
at least the highest concurrency, so no batch is capped below the sweep (`seqs_gate`): raised and said so where the
value came from elsewhere (unset, the base, the known-good entry), refused where the cell or arm itself set it lower;
an open-loop bench asks no concurrency, so a workload of rates alone leaves max_num_seqs as it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from redline.engines.base import Engine
from redline.errors import InputError
from redline.models import BenchWorkload, ServeConfig
from redline.models.trace import TraceRow
from redline.models.workloads import Load, NamedShape, WorkloadAt, WorkloadSpec
from redline.policy.trace_replay import mean_lengths, replay_rows, trace_workload

# How the target runs each engine (and each bench client), by engine name; None or a missing name: the default.
Executables = Mapping[str, Sequence[str]]

RUN_DIR = "$RUN_DIR"  # where a bench writes, on the target: the server's run folder, known once it starts
WARMUP_FILE = "warmup.json"
PROMPTS_PER_CONCURRENCY = 4  # the default when the workload names no num_prompts
MIN_PROMPTS_PER_CONCURRENCY = 2  # one full batch beyond ramp and drain
RATE_WINDOW_S = 60  # an open-loop bench's arrivals, by default: a minute of them
MIN_RATE_PROMPTS = 10  # the fewest an open-loop bench sends: its send rate is told from their spacing


@dataclass(frozen=True)
class Bench:
    """One bench a measured boot runs: where its result goes, what it sends, what its progress says."""

    result_name: str
    workload: BenchWorkload
    label: str
    warmup: bool = False
    repeat: int = 1  # which bench at its concurrency, where one boot benches each concurrency several times
    ranked: bool = True  # its figures are ranked, so the clean-bench checks apply (not a warm-up's, or a smoke test's)
    workload_name: str | None = None  # which of several named workloads it sends; None: the only one
    slo: Mapping[str, float] | None = None  # an open-loop bench's per-request limits, its goodput counted against
    replay: tuple[TraceRow, ...] | None = None  # a trace bench's requests, written beside its result before it runs


GOODPUT_LIMITS = {"ttft_ms": "ttft_ms", "tpot_ms": "tpot_ms"}  # a per-request limit, by what an SLA metric ends with


def goodput_slo(sla: Mapping[str, float]) -> dict[str, float] | None:
    """The per-request limits an SLA says (DistServe's goodput: a request is good when its own TTFT and TPOT are
    within them): each the tightest SLA limit on a TTFT or TPOT metric (p99_ttft_ms 600 -> ttft_ms 600); None where the
    SLA limits neither."""
    found: dict[str, float] = {}
    for metric, limit in sla.items():
        for suffix, key in GOODPUT_LIMITS.items():
            if metric.endswith(suffix):
                found[key] = min(limit, found.get(key, limit))
    return found or None


def prompts_at(asked: int | None, point: Load | int) -> tuple[int, str | None]:
    """How many prompts a load point (a concurrency c, or a rate) sends, and the gate's note when it had to raise
    them."""
    at = point if isinstance(point, Load) else Load(concurrency=point)
    if at.rate is not None:
        n = asked if asked is not None else max(MIN_RATE_PROMPTS, math.ceil(at.rate * RATE_WINDOW_S))
        if n >= MIN_RATE_PROMPTS:
            return n, None
        return MIN_RATE_PROMPTS, (
            f"{at.label}: num_prompts {n} raised to {MIN_RATE_PROMPTS} (an open-loop bench sends at least "
            f"{MIN_RATE_PROMPTS}, so the rate its client sent can be told)"
        )
    c = at.concurrency or 1
    n = asked if asked is not None else PROMPTS_PER_CONCURRENCY * c
    floor = MIN_PROMPTS_PER_CONCURRENCY * c
    if n >= floor:
        return n, None
    return floor, (
        f"concurrency {c}: num_prompts {n} raised to {floor} (every concurrency sends at least 2 x c "
        "prompts, so its window is not all ramp and drain)"
    )


def prompt_gates(loads: Sequence[WorkloadAt]) -> list[str]:
    """The gate's note for every load point (of every workload) whose prompts it raised."""
    return [
        (f"workload {name}: " if name else "") + note
        for name, shape, points in loads
        if shape.dataset != "trace"  # a trace sends its window's rows
        for p in points
        if (note := prompts_at(shape.num_prompts, p)[1])
    ]


def length_gate(shapes: Sequence[NamedShape], max_model_len: int, who: str, fix: str) -> None:
    """InputError naming `who` (a cell, an arm) and the workload whose requests max_model_len cannot hold."""
    for name, w in shapes:
        if max_model_len < w.tokens:
            raise InputError(
                f"{who}: max_model_len {max_model_len:,} cannot hold the workload{f' {name!r}' if name else ''}: "
                f"{_request(w)} = {w.tokens:,} tokens: {fix} or shorten the workload"
            )


def _request(w: WorkloadSpec) -> str:
    """The longest request of a workload, in its parts."""
    if w.dataset == "trace":
        return f"the trace's longest request ({w.trace})"
    spread = f" x {1 + w.range_ratio:g}" if w.range_ratio else ""
    prefix = f"prefix_len {w.prefix_len:,} + " if w.prefix_len else ""
    return f"{prefix}input_len {w.input_len:,}{spread} + output_len {w.output_len:,}{spread}"


def seqs_gate(
    config: ServeConfig, concurrencies: Sequence[int], whose: str, name: str, *, own: bool, source: str
) -> tuple[ServeConfig, list[str]]:
    """config with max_num_seqs at least the highest concurrency, and the gate's note when it changed it.

    `whose` and `name`: the cell or arm ("cell", "mnbt8192"), as a refusal names it; `own`: max_num_seqs was set by
    the cell or arm itself (a value below the top is refused: InputError); `source`: where it came from otherwise
    (base, the known-good entry).
    """
    if not concurrencies:  # open loop alone: no concurrency asked, the server's own cap is part of what is measured
        return config, []
    top = max(concurrencies)
    seqs = config.max_num_seqs
    if seqs is not None and seqs >= top:
        return config, []
    if own:
        raise InputError(
            f"{whose} {name!r}: max_num_seqs {seqs} (set by the {whose}) is below the highest concurrency {top}, so "
            f"its decode batch would be capped below the sweep: raise it, or drop the concurrencies above {seqs}"
        )
    if seqs is None:
        note = (
            f"max_num_seqs was unset (the engine's default depends on the hardware): pinned to {top}, "
            "the highest concurrency"
        )
    else:
        note = f"max_num_seqs {seqs} (from {source}) raised to {top}, the highest concurrency"
    return config.model_copy(update={"max_num_seqs": top}), [note]


def bench_workload(shape: WorkloadSpec, point: Load | int, step: int, result_name: str = "") -> BenchWorkload:
    """The workload of the bench at place `step` on a server, at one load point (a concurrency, a rate, a trace's
    arrivals sped up), its result `result_name`. Each bench on a server gets its own seed, so none replays an earlier
    one's prompts into the prefix cache, and every server runs the same seeds in the same order."""
    at = point if isinstance(point, Load) else Load(concurrency=point)
    if shape.dataset == "trace":
        return trace_workload(shape, at, shape.seed + 1 + step, result_name)
    input_len, output_len = shape.lengths
    return BenchWorkload(
        input_len=input_len,
        output_len=output_len,
        concurrency=at.concurrency,
        rate=at.rate,
        burstiness=shape.burstiness if at.rate is not None else 1.0,
        num_prompts=prompts_at(shape.num_prompts, at)[0],
        seed=shape.seed + 1 + step,
        range_ratio=shape.range_ratio,
        prefix_len=shape.prefix_len,
    )


def warmup_workload(shape: WorkloadSpec, requests: int, concurrencies: Sequence[int]) -> BenchWorkload | None:
    """The warm-up every server gets before its first measured bench (closed loop, at most the highest concurrency);
    None for a cold bench (0 requests)."""
    if requests == 0:
        return None
    input_len, output_len = mean_lengths(shape)  # a trace's: random prompts of its typical request
    return BenchWorkload(
        input_len=input_len,
        output_len=output_len,
        concurrency=min(requests, max(concurrencies, default=requests)),
        num_prompts=requests,
        seed=shape.seed,
        range_ratio=shape.range_ratio,
        prefix_len=shape.prefix_len,
    )


def bench_file(point: Load | int, repeat: int = 1, repeats: int = 1, workload: str | None = None) -> str:
    """A bench's result file: bench-c16.json, bench-r4.json, bench-<workload>-c16-t2.json."""
    tag = point.tag if isinstance(point, Load) else f"c{point}"
    named = f"bench-{workload}-{tag}" if workload is not None else f"bench-{tag}"
    return f"{named}.json" if repeats == 1 else f"{named}-t{repeat}.json"


def boot_benches(
    loads: Sequence[WorkloadAt], warmup_requests: int, repeats: int, slo: Mapping[str, float] | None = None
) -> list[Bench]:
    """Every bench one server gets, in order: the warm-up (the first workload's), then each load point of each
    workload of each repeat (repeats outermost, so they interleave; then workloads, so each repeat sees every one),
    each workload at its own concurrencies and rates. `slo`: the per-request limits an open-loop bench's goodput is
    counted against (goodput_slo of the SLA)."""
    steps = []
    warm = warmup_workload(loads[0].shape, warmup_requests, [c for w in loads for c in w.concurrencies])
    if warm is not None:
        steps.append(
            Bench(WARMUP_FILE, warm, f"warming up with {warm.num_prompts} requests", warmup=True, ranked=False)
        )
    order = [(p, t, (w.name, w.shape)) for t in range(1, repeats + 1) for w in loads for p in w.points]
    for i, (p, t, (name, shape)) in enumerate(order):
        said = f"concurrency {p.concurrency}" if p.concurrency is not None else p.label
        label = (f"{name}, " if name else "") + said + (f", repeat {t} of {repeats}" if repeats > 1 else "")
        file = bench_file(p, t, repeats, name)
        limits = slo if p.open_loop else None
        sent = bench_workload(shape, p, i, file)
        replay = replay_rows(shape.replayed, p) if shape.dataset == "trace" else None
        steps.append(Bench(file, sent, label, repeat=t, workload_name=name, slo=limits, replay=replay))
    return steps


@dataclass(frozen=True)
class PlannedCommands:
    """A measured boot's commands as a plan shows them: the boot, the warm-up's (None: a cold bench), and each bench
    step with its command."""

    boot: list[str]
    warmup: list[str] | None
    benches: list[tuple[Bench, list[str]]]


def commands_of(
    engine: Engine, config: ServeConfig, steps: Sequence[Bench], executables: Executables | None
) -> PlannedCommands:
    """The commands one server of config runs for `steps`: the engine's boot, its bench client's benches against it
    (writing into $RUN_DIR), each as the target runs that engine (`executables`; default: the engine's own)."""
    exes = executables or {}
    argv = {
        s.result_name: engine.bench_argv(
            config,
            s.workload,
            result_dir=RUN_DIR,
            result_filename=s.result_name,
            executable=exes.get(engine.bench_client),
        )
        for s in steps
    }
    return PlannedCommands(
        boot=engine.serve_argv(config, exes.get(engine.name)),
        warmup=next((argv[s.result_name] for s in steps if s.warmup), None),
        benches=[(s, argv[s.result_name]) for s in steps if not s.warmup],
    )


__all__ = [
    "PlannedCommands",
    "Executables",
    "RUN_DIR",
    "commands_of",
    "MIN_PROMPTS_PER_CONCURRENCY",
    "WARMUP_FILE",
    "Bench",
    "bench_file",
    "boot_benches",
    "PROMPTS_PER_CONCURRENCY",
    "MIN_RATE_PROMPTS",
    "RATE_WINDOW_S",
    "bench_workload",
    "goodput_slo",
    "prompt_gates",
    "prompts_at",
    "seqs_gate",
    "length_gate",
    "warmup_workload",
]
