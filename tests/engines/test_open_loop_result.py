"""An open-loop bench's result as vLLM's client saves it with --save-detailed (issue 41, item 1): the reader derives
the rate the client sent and, against per-request limits, the goodput; figures a file states for them are not
believed; per-request figures no client writes are refused naming the field."""

from __future__ import annotations

import json

import pytest

from redline.engines.vllm.bench import parse_bench_result
from redline.errors import InputError

BASE = {"num_prompts": 4, "completed": 4, "failed": 0, "duration": 2.0, "request_rate": 2.0, "burstiness": 1.0}
EACH = {
    "start_times": [100.0, 100.5, 101.0, 101.5],  # 3 gaps over 1.5 s: 2 req/s sent
    "ttfts": [0.1, 0.2, 0.9, 0.1],  # seconds
    "latencies": [1.1, 1.2, 1.9, 5.1],  # the last: 5 s of decode over 10 tokens, a TPOT of 555 ms
    "output_lens": [11, 11, 11, 10],
}


def test_the_reader_derives_the_rate_sent_and_the_goodput_against_per_request_limits() -> None:
    result = parse_bench_result(json.dumps(BASE | EACH), {"ttft_ms": 500, "tpot_ms": 200})
    assert result.sent_rate == pytest.approx(2.0) and result.request_rate == 2.0
    assert result.good_requests == 2  # the third's TTFT is 900 ms, the fourth's TPOT 555 ms
    assert result.goodput_requests == pytest.approx(1.0) and result.goodput_output_throughput == pytest.approx(11.0)
    assert result.goodput_slo == {"ttft_ms": 500, "tpot_ms": 200}
    no_sla = parse_bench_result(json.dumps(BASE | EACH))
    assert no_sla.sent_rate == pytest.approx(2.0) and no_sla.goodput_requests is None


def test_a_file_that_states_the_derived_figures_is_not_believed() -> None:
    stated = BASE | {"sent_rate": 999.0, "goodput_requests": 999.0, "good_requests": 4}
    result = parse_bench_result(json.dumps(stated), {"ttft_ms": 500})
    assert (result.sent_rate, result.goodput_requests, result.good_requests) == (None, None, None)


@pytest.mark.parametrize(("field", "value"), [("start_times", [1e400, 1]), ("ttfts", [-1.0]), ("output_lens", [1.5])])
def test_per_request_figures_no_client_writes_are_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(InputError, match=f"the bench result is refused: {field}"):
        parse_bench_result(json.dumps(BASE | EACH | {field: value}).replace("Infinity", "1e400"))
