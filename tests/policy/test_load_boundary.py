"""The load boundary inside one boot (pure): doubling then bisection to 5%, replicates that must agree, the binding
limit named, a cliff flagged; driven against made-up servers whose latency at each concurrency is known."""

from __future__ import annotations

import math
from collections.abc import Callable

from redline.models.load_boundary import LoadBoundary
from redline.policy.load_boundary import Next, Probe, decide

SLA = {"p99_ttft_ms": 1000.0, "median_tpot_ms": 50.0}


def search(server: Callable[[int, int], dict[str, float]], **kw: int) -> LoadBoundary:
    probes: list[Probe] = []
    while True:
        found = decide(probes, SLA, **kw)
        if isinstance(found, LoadBoundary):
            return found
        assert isinstance(found, Next) and len(probes) < 60
        replicate = sum(1 for p in probes if p.concurrency == found.concurrency)
        probes.append(Probe(found.concurrency, server(found.concurrency, replicate)))


def smooth(c: int, _: int) -> dict[str, float]:
    """TTFT grows with load; TPOT passes 50 ms past c = 100."""
    return {"p99_ttft_ms": 10.0 * c, "median_tpot_ms": 20.0 + 0.3 * c}


def test_doubling_then_bisection_finds_the_boundary_to_five_percent_and_names_what_binds() -> None:
    found = search(smooth)
    # TPOT binds first: 20 + 0.3c <= 50 up to c = 100; TTFT would hold to 100 as well (10c <= 1000)
    assert found.concurrency is not None and 95 <= found.concurrency <= 100
    assert found.binding in ("median_tpot_ms", "p99_ttft_ms") and not found.cliff
    assert found.probes <= 2 * 13  # AIPerf's monotonic search: about 10 probes, each replicated twice here


def test_a_cliff_is_flagged() -> None:
    def cliff(c: int, _: int) -> dict[str, float]:
        return {"p99_ttft_ms": 100.0 if c <= 40 else 20_000.0, "median_tpot_ms": 10.0}

    found = search(cliff)
    assert found.concurrency == 40 and found.binding == "p99_ttft_ms" and found.cliff
    assert "a cliff" in found.why


def test_replicates_that_disagree_ask_for_more_and_a_split_probe_counts_as_failed() -> None:
    def flaky(c: int, replicate: int) -> dict[str, float]:
        ok = c <= 32 or (c <= 48 and replicate % 2 == 0)  # 33-48: pass, fail, pass, fail...
        return {"p99_ttft_ms": 500.0 if ok else 5000.0, "median_tpot_ms": 10.0}

    found = search(flaky)
    assert found.concurrency is not None and 31 <= found.concurrency <= 32


def test_the_lowest_failing_and_the_highest_holding_are_said() -> None:
    assert search(lambda c, r: {"p99_ttft_ms": 5000.0, "median_tpot_ms": 10.0}).concurrency is None
    top = search(lambda c, r: {"p99_ttft_ms": 1.0, "median_tpot_ms": 1.0}, highest=64)
    assert top.concurrency == 64 and top.binding is None and "highest" in top.why


def test_the_probes_follow_a_log_search_not_a_fixed_list() -> None:
    found = search(smooth, highest=4096)
    assert found.probes <= 2 * (math.ceil(math.log2(100)) + math.ceil(math.log2(100 / 5)) + 2)
