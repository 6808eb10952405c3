"""vLLM's metrics endpoint (`GET /metrics`, Prometheus text): the prefix cache's counters, in prompt tokens."""

from __future__ import annotations

import re

from redline.models.clean_bench import PrefixCounters

PATH = "/metrics"
HITS, QUERIES = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+([0-9.eE+-]+)")
MAX_TEXT = 8 << 20


def prefix_counters(text: str) -> PrefixCounters | None:
    """The two counters summed over their label sets (one per engine core); None when the text has neither."""
    sums: dict[str, float] = {}
    for line in text[:MAX_TEXT].splitlines():
        if (m := _SAMPLE.match(line)) and m.group(1) in (HITS, QUERIES):
            try:
                value = float(m.group(2))
            except ValueError:
                continue
            if value >= 0 and value != float("inf"):
                sums[m.group(1)] = sums.get(m.group(1), 0.0) + value
    if QUERIES not in sums:
        return None
    return PrefixCounters(queries=sums[QUERIES], hits=sums.get(HITS, 0.0))


__all__ = ["PATH", "prefix_counters"]
