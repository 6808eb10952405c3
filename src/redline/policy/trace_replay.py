"""A trace workload's benches (policy, pure): which of its rows each bench sends, when, and what it is checked by.

    rows = replay_rows(shape.replayed, point)      # its arrivals from 0, sped up (x2: twice as fast); none where the
                                                   # client paces it (a rate, a concurrency)
    workload = trace_workload(shape, point, seed, "bench-chat-x1.json")   # BenchWorkload(dataset="trace", ...)

A trace bench sends every row of the workload's window, each a fresh prompt of its input length (the engine's bench
client makes the prompt tokens, from ids no earlier bench used: engines/vllm/bench_dataset.py), and asks its output
length with the end-of-sequence ignored. At its arrivals, it asks the rate they make (the window's own rate times the
speedup): the client that sent under 90% of it could not keep the trace's pace, and the bench is not judged
(policy/clean_bench.py). At a rate it is the trace's lengths with Poisson (or gamma) arrivals; at a concurrency, its
lengths closed loop.
"""

from __future__ import annotations

from redline.errors import InputError
from redline.models.bench import BenchWorkload
from redline.models.load import Load
from redline.models.trace import Trace, TraceRow
from redline.models.workloads import WorkloadSpec


def trace_file_of(result_name: str) -> str:
    """The file a trace bench's requests are written to, beside its result: bench-chat-x1.json ->
    bench-chat-x1.trace.jsonl."""
    return f"{result_name.removesuffix('.json')}.trace.jsonl"


def replay_rows(trace: Trace, point: Load) -> tuple[TraceRow, ...]:
    """The rows a bench at `point` sends: at a speedup, with their arrivals from 0 and that many times closer; at a
    rate or a concurrency, with no arrival (the client paces them)."""
    if point.speedup is None:
        return tuple(TraceRow(r.input_len, r.output_len) for r in trace.rows)
    if not trace.arrivals:
        raise InputError(f"{point.label}: the trace has no arrival times to replay: give it rates or concurrencies")
    origin = float(trace.rows[0].arrival_s or 0.0)
    return tuple(
        TraceRow(r.input_len, r.output_len, (float(r.arrival_s or 0.0) - origin) / point.speedup) for r in trace.rows
    )


def trace_workload(shape: WorkloadSpec, point: Load, seed: int, result_name: str) -> BenchWorkload:
    """The workload of a trace bench at one load point: every row of the window, its longest lengths said, the rate
    its arrivals ask where it replays them."""
    trace = shape.replayed
    input_len, output_len = shape.lengths
    own = trace.own_rate
    return BenchWorkload(
        dataset="trace",
        input_len=input_len,
        output_len=output_len,
        concurrency=point.concurrency,
        rate=point.rate,
        burstiness=shape.burstiness if point.rate is not None else 1.0,
        speedup=point.speedup,
        paced_rate=own * point.speedup if point.speedup is not None and own else None,
        trace_file=trace_file_of(result_name),
        num_prompts=len(trace.rows),
        seed=seed,
    )


def mean_lengths(shape: WorkloadSpec) -> tuple[int, int]:
    """A workload's typical request: the random prompts' own lengths, or the trace's mean input and output (what a
    warm-up of it sends)."""
    if shape.dataset != "trace":
        return shape.lengths
    rows = shape.replayed.rows
    return max(1, round(sum(r.input_len for r in rows) / len(rows))), max(
        1, round(sum(r.output_len for r in rows) / len(rows))
    )


__all__ = ["mean_lengths", "replay_rows", "trace_file_of", "trace_workload"]
