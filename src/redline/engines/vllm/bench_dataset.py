"""The file `vllm bench serve --dataset-name timed_trace` reads for a trace bench: one JSON row per request, its
arrival (`timestamp`, seconds from the first; the client sends each then where it keeps the trace's own time), its
input and output lengths, and its `hash_ids`: the client expands each id into HASH_CHUNK prompt tokens of its own
choosing (vllm/benchmarks/datasets: TimedTrace), so ids no earlier bench used make prompts no earlier bench sent.

    text = timed_trace(workload, rows)     # rows: policy/trace_replay.py replay_rows

Each id is the bench's seed, the row and the chunk packed into one integer (seed << 40 | row << 16 | chunk), so a bench
of another seed (every bench on a server has its own) sends other prompts, and the same seed the same ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from redline.models.bench import BenchWorkload
from redline.models.trace import TraceRow

HASH_CHUNK = 256  # prompt tokens each hash id stands for (--timed-trace-chunk-hash-size)


def timed_trace(workload: BenchWorkload, rows: Sequence[TraceRow]) -> str:
    """The timed-trace rows of a trace bench: each request's arrival (0 where the client paces it), lengths and fresh
    hash ids."""
    seed = workload.seed or 0
    lines = []
    for i, row in enumerate(rows):
        ids = [(seed << 40) | (i << 16) | k for k in range(math.ceil(row.input_len / HASH_CHUNK))]
        at = round(row.arrival_s, 6) if row.arrival_s is not None else 0.0
        line = {"timestamp": at, "input_length": row.input_len, "output_length": row.output_len, "hash_ids": ids}
        lines.append(json.dumps(line, separators=(",", ":")))
    return "\n".join(lines) + "\n"


__all__ = ["HASH_CHUNK", "timed_trace"]
