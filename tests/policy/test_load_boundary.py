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


def search_rates(server: Callable[[float], dict[str, float]], unsent: float | None = None) -> LoadBoundary:
    """decide by rate against a server whose latency at each rate is known; rates at or past `unsent` not judged."""
    probes: list[Probe] = []
    while True:
        found = decide(probes, SLA, lowest=0.5, highest=64, repeats=1, by="rate")
        if isinstance(found, LoadBoundary):
            return found
        assert isinstance(found, Next) and found.by == "rate" and len(probes) < 60
        rate = found.concurrency
        why = "the client sent less" if unsent is not None and rate >= unsent else None
        probes.append(Probe(rate, server(rate), why))


def test_by_rate_the_boundary_is_bisected_to_five_percent_in_thousandths_of_a_request_per_second() -> None:
    found = search_rates(lambda r: {"p99_ttft_ms": 100.0 * max(1.0, r / 3) ** 3, "median_tpot_ms": 10.0})
    assert found.by == "rate" and found.finished and found.concurrency is None
    assert found.rate is not None and 6.1 <= found.rate <= 6.46 and found.rate == round(found.rate, 3)  # 3 x 10^(1/3)
    assert found.binding == "p99_ttft_ms" and "req/s" in found.why


def test_by_rate_a_rate_the_client_could_not_send_stops_the_probing_unjudged() -> None:
    found = search_rates(lambda r: {"p99_ttft_ms": 10.0, "median_tpot_ms": 10.0}, unsent=4)
    assert not found.finished and found.rate == 2.0
    assert found.why.startswith("not judged at 4 req/s: the client sent less; the highest that held below it: 2 req/s")
