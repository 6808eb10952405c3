"""Clean-bench checks: a bench's figures are ranked only if it is clean (policy, pure).

- Prefix cache: the server's hit counters read before and after the bench (its metrics endpoint, through the
  engine). A random-prompt bench that found more than HIT_LIMIT of its prompt tokens already cached measured a warm
  cache it did not ask for (a repeated seed, a warm-up with the same prompts): vLLM's issues #52884 and #54227 saw
  throughput inflated by up to 86%, differently per concurrency. Flagged, never ranked.
- Client: the client's own peak of requests in flight against the concurrency asked; a client that never reached
  it (too few prompts, a slow client, the server refusing) measured another load. Flagged.
- Window: the figures cover the whole run, ramp-up and drain included (the bench client reports no steady state);
  said, so nobody reads them as a steady state.
"""

from __future__ import annotations

from redline.models.bench import BenchResult
from redline.models.clean_bench import BenchCheck, PrefixCounters

HIT_LIMIT = 0.01  # the share of prompt tokens a random-prompt bench may find cached (vLLM's own warning: 1%)


def prefix_cache(before: PrefixCounters | None, after: PrefixCounters | None) -> BenchCheck:
    if before is None or after is None:
        return BenchCheck(
            check="prefix_cache", ok=True, said="prefix-cache counters not read (the engine exposes none)"
        )
    queries, hits = after.queries - before.queries, after.hits - before.hits
    if queries <= 0:
        return BenchCheck(check="prefix_cache", ok=True, said="no prompt token was looked up in the prefix cache")
    rate = max(hits, 0.0) / queries
    said = f"{rate:.1%} of {queries:,.0f} prompt tokens were found in the prefix cache"
    if rate > HIT_LIMIT:
        return BenchCheck(
            check="prefix_cache",
            ok=False,
            said=f"{said}: the bench measured a warm cache it did not ask for (over {HIT_LIMIT:.0%}); not ranked",
        )
    return BenchCheck(check="prefix_cache", ok=True, said=said)


def client(result: BenchResult, requested: int) -> BenchCheck:
    reached = result.max_concurrent_requests
    if reached is None:
        return BenchCheck(check="client", ok=True, said="the client did not report its requests in flight")
    if reached < requested:
        return BenchCheck(
            check="client",
            ok=False,
            said=f"the client had at most {reached} of the {requested} requests asked in flight: another load; "
            "not ranked",
        )
    return BenchCheck(
        check="client", ok=True, said=f"the client reached {reached} requests in flight ({requested} asked)"
    )


def window(result: BenchResult) -> BenchCheck:
    return BenchCheck(
        check="window",
        ok=True,
        said=f"whole run: {result.duration:.1f} s, ramp-up and drain included (no steady-state window reported)",
    )


def checks(
    result: BenchResult, requested: int, before: PrefixCounters | None, after: PrefixCounters | None
) -> list[BenchCheck]:
    """Every check of one bench; any not ok keeps its figures out of a ranking."""
    return [prefix_cache(before, after), client(result, requested), window(result)]


def clean(found: list[BenchCheck]) -> bool:
    return all(c.ok for c in found)


__all__ = ["HIT_LIMIT", "checks", "clean", "client", "prefix_cache", "window"]
