"""A trace file is untrusted input (issue 41, item 2; issue 19's classes): redline's JSONL rows, and the Azure LLM
inference traces' and BurstGPT's columns as their CSVs give them, read into rows of lengths and arrival times; a
hostile row (a length that is not a count, zero tokens out, a time that is not one, an unknown field, arrivals out of
order, a nest or a number past reason) is refused in one line naming the file, the line and the field; a file too big
or too long is refused before it is read row by row. The rows below are made up in each format's shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.errors import InputError
from redline.models.trace import MAX_ROWS, MAX_TRACE_BYTES, parse_trace

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "traces" / "chat-sample.jsonl"
AZURE = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:48.1805900,396,109\n"
)
BURST = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5.0,ChatGPT,472,18,490,Conversation log\n"
    "7.5,GPT-4,100,20,120,API log\n"
)


def test_each_format_is_read_into_lengths_and_arrivals() -> None:
    jsonl = parse_trace(
        '{"input_len": 10, "output_len": 4, "arrival_s": 1.5}\n\n{"input_len": 20, "output_len": 8, "arrival_s": 3.5}\n',
        "t.jsonl",
    )
    assert jsonl.format == "jsonl" and [(r.input_len, r.output_len, r.arrival_s) for r in jsonl.rows] == [
        (10, 4, 1.5),
        (20, 8, 3.5),
    ]
    assert jsonl.own_rate == pytest.approx(0.5) and jsonl.longest == 28 and len(jsonl.sha256) == 64
    azure = parse_trace(AZURE, "a.csv")
    assert azure.format == "azure" and [(r.input_len, r.output_len) for r in azure.rows] == [(374, 44), (396, 109)]
    assert azure.span_s == pytest.approx(1.5)  # seven decimals of a second, as the Azure trace writes them
    burst = parse_trace(BURST, "b.csv")
    assert burst.format == "burstgpt" and [(r.arrival_s, r.input_len, r.output_len) for r in burst.rows] == [
        (5.0, 472, 18),
        (7.5, 100, 20),
    ]
    lengths = parse_trace('{"input_len": 10, "output_len": 4}\n', "l.jsonl")
    assert not lengths.arrivals and lengths.own_rate is None  # lengths alone: replayed at a rate, never as recorded


def test_a_window_takes_the_rows_of_a_span_of_time_then_a_slice_of_them() -> None:
    rows = "\n".join(f'{{"input_len": {10 + i}, "output_len": 4, "arrival_s": {100 + i}}}' for i in range(10))
    trace = parse_trace(rows, "t.jsonl")
    assert [r.input_len for r in trace.window(2, 6, 0, None).rows] == [12, 13, 14, 15]
    assert [r.input_len for r in trace.window(None, None, 3, 2).rows] == [13, 14]
    with pytest.raises(ValueError, match="the window holds no row of the trace"):
        trace.window(50, None, 0, None)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"input_len": 10, "output_len": 4}\n{"input_len": 10, "output_len": 0}',
            "t line 2: output_len is 0, not from 1",
        ),
        (
            '{"input_len": 10, "output_len": 4}\n{"input_len": -3, "output_len": 4}',
            "t line 2: input_len is -3, not from 1",
        ),
        ('{"input_len": 1e400, "output_len": 4}', "t line 1: input_len is 'inf', not a whole number of tokens"),
        ('{"input_len": 10.5, "output_len": 4}', "t line 1: input_len is '10.5', not a whole number of tokens"),
        ('{"input_len": true, "output_len": 4}', "t line 1: input_len is 'True', not a whole number of tokens"),
        ('{"input_len": 99999999999, "output_len": 4}', "t line 1: input_len is 99999999999, not from 1 to"),
        (
            '{"input_len": 10, "output_len": 4, "arrival_s": "NaN"}',
            "t line 1: arrival_s is 'nan', not a number of seconds",
        ),
        ('{"input_len": 10, "output_len": 4, "arrival_s": -1}', "t line 1: arrival_s is -1, not from 0 to"),
        ('{"input_len": 10, "output_len": 4, "prompt": "hi"}', "t line 1: unknown field 'prompt'; a row has"),
        ('{"input_len": 10}', "t line 1: output_len is missing"),
        ('{"input_len": 10, "output_len": 4}\n[1, 2]', "t line 2: not a JSON object as"),
        ('{"input_len": 10, "output_len": 4}\n' + "[" * 5000, "t line 2: not a JSON object as"),
        (
            '{"input_len": 1, "output_len": 1, "arrival_s": 9}\n{"input_len": 1, "output_len": 1, "arrival_s": 2}',
            "t line 2: it arrived before the row above it (2 s < 9 s): sort the trace by arrival",
        ),
        (
            '{"input_len": 1, "output_len": 1, "arrival_s": 9}\n{"input_len": 1, "output_len": 1}',
            "t line 2: arrival_s is missing, where other rows say it",
        ),
        (AZURE + "2023-11-16 18:15:49,12\n", "t line 4: 2 fields, where its header names 3"),
        (AZURE + "yesterday,12,4\n", "t line 4: TIMESTAMP is 'yesterday', not a time"),
        (BURST + "9.0,ChatGPT,12,0,12,API log\n", "t line 4: Response tokens is 0, not from 1 to 4,194,304 tokens: a "),
        ("prompt,completion\nhi,there\n", "t: its first line is neither a JSON row"),
        ("", "t: its first line is neither a JSON row"),
    ],
)
def test_a_hostile_row_is_refused_naming_the_file_the_line_and_the_field(text: str, said: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_trace(text, "t")
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_a_trace_too_big_or_too_long_is_refused_before_its_rows_are_read() -> None:
    with pytest.raises(InputError, match=r"^t is 64 MiB, over the 64 MiB redline reads"):
        parse_trace("x" * (MAX_TRACE_BYTES + 1), "t")
    with pytest.raises(InputError, match=r"lines, over the 1,000,000 rows a trace may have: take a window"):
        parse_trace("{}\n" * (MAX_ROWS + 2), "t")


def test_the_shipped_example_reads_as_a_trace_with_arrivals() -> None:
    trace = parse_trace(EXAMPLE.read_text(), "chat-sample.jsonl")
    assert trace.format == "jsonl" and trace.arrivals and len(trace.rows) >= 100
    assert trace.own_rate is not None and 1 <= trace.own_rate <= 20 and trace.longest <= 1024
