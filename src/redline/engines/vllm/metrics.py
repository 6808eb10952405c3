"""vLLM's metrics endpoint (`GET /metrics`, Prometheus text): the prefix cache's counters, in prompt tokens; and its
reset (`POST /reset_prefix_cache`, served only in its dev mode: `VLLM_SERVER_DEV_MODE=1`), answered
`{"success": true}` once the cache is empty (false while a request holds blocks)."""

from __future__ import annotations

import json
import re

from redline.models.clean_bench import PrefixCounters

PATH = "/metrics"
RESET_PATH = "/reset_prefix_cache"
DEV_MODE = "VLLM_SERVER_DEV_MODE"
HITS, QUERIES = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+([0-9.eE+-]+)")
_MAX_TEXT = 8 << 20  # the longest /metrics text read


def prefix_counters(text: str) -> PrefixCounters | None:
    """The two counters summed over their label sets (one per engine core); None when the text has neither."""
    sums: dict[str, float] = {}
    for line in text[:_MAX_TEXT].splitlines():
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


def reset_done(answer: str) -> bool:
    """Whether the reset's answer says the cache was emptied."""
    try:
        said = json.loads(answer[:4096])
    except ValueError:
        return False
    return isinstance(said, dict) and said.get("success") is True


__all__ = ["DEV_MODE", "PATH", "RESET_PATH", "prefix_counters", "reset_done"]
