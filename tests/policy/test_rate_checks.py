"""The client's check of an open-loop bench (policy/clean_bench.py, issue 41): the rate it sent against the rate
asked; under 90% it could not send it, over 1.5x it did not pace its requests; either way the point is not judged.
A closed-loop bench keeps its concurrency check, and the SLA's limits become per-request goodput limits."""

from __future__ import annotations

import pytest

from redline.models.bench import BenchResult, BenchWorkload
from redline.policy.clean_bench import sent_check
from redline.policy.workload import goodput_slo

OPEN = BenchWorkload(input_len=8, output_len=4, rate=4.0, num_prompts=20)


def result(sent: float | None) -> BenchResult:
    return BenchResult(num_prompts=20, completed=20, duration=5.0, sent_rate=sent, max_concurrent_requests=3)


@pytest.mark.parametrize(
    ("sent", "ok", "said"),
    [
        (4.02, True, "the client sent 4.02 req/s (4 asked)"),
        (3.7, True, "the client sent 3.7 req/s (4 asked)"),
        (3.1, False, "the client sent 3.1 req/s of the 4 asked (78%, under 90%): it could not send that rate"),
        (9.0, False, "the client sent 9 req/s, 2.2x the 4 asked: it did not pace the requests as asked"),
        (None, False, "4 req/s asked, and the client saved no send times to tell what it sent"),
    ],
)
def test_an_open_loop_bench_is_checked_by_the_rate_its_client_sent(sent: float | None, ok: bool, said: str) -> None:
    check = sent_check(result(sent), OPEN)
    assert check.check == "rate" and check.ok is ok and said in check.said
    assert ("not judged" in check.said) is not ok


def test_a_trace_at_its_arrivals_is_checked_by_the_rate_they_ask_and_a_closed_loop_bench_by_its_concurrency() -> None:
    paced = BenchWorkload(
        dataset="trace",
        input_len=8,
        output_len=4,
        speedup=2.0,
        paced_rate=6.0,
        trace_file="b.trace.jsonl",
        num_prompts=20,
    )
    assert not sent_check(result(4.0), paced).ok and "of the 6 asked" in sent_check(result(4.0), paced).said
    closed = BenchWorkload(input_len=8, output_len=4, concurrency=4, num_prompts=8)
    check = sent_check(result(None), closed)
    assert check.check == "client" and not check.ok and "at most 3 of the 4 requests asked" in check.said


def test_the_sla_gives_the_tightest_per_request_limit_on_ttft_and_on_tpot() -> None:
    sla = {"p99_ttft_ms": 600, "median_ttft_ms": 300, "median_tpot_ms": 50, "output_throughput": 100}
    assert goodput_slo(sla) == {"ttft_ms": 300, "tpot_ms": 50}
    assert goodput_slo({"output_throughput": 100}) is None
