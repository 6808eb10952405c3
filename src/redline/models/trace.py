"""A trace: the requests a service saw, as rows of input and output lengths and, where it has them, arrival times; a
trace workload (models/workloads.py `trace:`) replays it. Read from a file anyone may have written (untrusted input,
issue 19): its size, its rows and each value are bounded, and a bad row is refused naming its line and field.

    trace = parse_trace(text, "traces/chat.jsonl")          # InputError naming the row and the field
    trace.rows, trace.arrivals, trace.own_rate, trace.longest

Three formats, told by the file's first line:

    JSONL (redline's own):  {"input_len": 812, "output_len": 130, "arrival_s": 0.41}   arrival_s optional: seconds
                            from any origin, in order
    Azure LLM inference traces (CSV, AzurePublicDataset's AzureLLMInferenceTrace_*.csv):
                            TIMESTAMP,ContextTokens,GeneratedTokens     2023-11-16 18:15:46.6805900,374,44
    BurstGPT (CSV, BurstGPT_*.csv):
                            Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
                            5.0,ChatGPT,472,18,490,Conversation log

A request that generated nothing (BurstGPT logs its failures with 0 response tokens) is not replayable: refused with its
line named, so a person drops it (or takes BurstGPT's file without failures) knowingly.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from redline.errors import InputError

TraceFormat = Literal["jsonl", "azure", "burstgpt"]
MAX_TRACE_BYTES = 64 << 20  # a day of a busy service's lengths and times is a few MB
MAX_ROWS = 1_000_000
MAX_LEN = 1 << 22  # tokens in one request's input or output: past any model's context
MAX_ARRIVAL_S = 1e9  # seconds from the trace's origin: 31 years
AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
BURSTGPT = ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type")
JSONL_KEYS = frozenset({"input_len", "output_len", "arrival_s"})
JSONL_EXAMPLE = '{"input_len": 812, "output_len": 130, "arrival_s": 0.41}'
CSV_FIELDS = {  # each CSV's arrival, input and output columns
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
}
JSONL_EXAMPLE = '{"input_len": 812, "output_len": 130, "arrival_s": 0.41}'
CSV_FIELDS = {  # each CSV's arrival, input and output columns
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
}


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace: its prompt and output tokens, and when it arrived (seconds, None: not said)."""

    input_len: int
    output_len: int
    arrival_s: float | None = None


@dataclass(frozen=True)
class Trace:
    """A trace read whole: its rows in order, the format they came in, the text's SHA-256 (what a figure's context
    names)."""

    rows: tuple[TraceRow, ...]
    format: TraceFormat
    sha256: str

    @property
    def arrivals(self) -> bool:
        """Every row says when it arrived."""
        return all(r.arrival_s is not None for r in self.rows)

    @property
    def span_s(self) -> float | None:
        """From its first arrival to its last; None without arrivals."""
        if not self.arrivals:
            return None
        return float(self.rows[-1].arrival_s) - float(self.rows[0].arrival_s)  # type: ignore[arg-type]

    @property
    def own_rate(self) -> float | None:
        """Its own mean rate, requests/s: (rows - 1) over its span; None without arrivals or a span."""
        span = self.span_s
        return (len(self.rows) - 1) / span if span else None

    @property
    def longest(self) -> int:
        """The most tokens one of its requests holds at its end (input and output): what max_model_len must fit."""
        return max(r.input_len + r.output_len for r in self.rows)

    def window(self, start_s: float | None, end_s: float | None, first: int, count: int | None) -> Trace:
        """The rows from `start_s` to `end_s` seconds after its first arrival (None: from its start, to its end), then
        from the `first` of those, at most `count`; ValueError where none is left."""
        rows = list(self.rows)
        if start_s is not None or end_s is not None:
            origin = float(rows[0].arrival_s or 0.0)
            lo, hi = start_s or 0.0, math.inf if end_s is None else end_s
            rows = [r for r in rows if lo <= float(r.arrival_s or 0.0) - origin < hi]
        rows = rows[first : None if count is None else first + count]
        if not rows:
            raise ValueError("the window holds no row of the trace: widen it")
        return Trace(tuple(rows), self.format, self.sha256)


def _count(value: object, where: str, field: str) -> int:
    """A token count: a whole number from 1 to MAX_LEN."""
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 12:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {field} is {str(value)[:40]!r}, not a whole number of tokens")
    if not 1 <= value <= MAX_LEN:
        why = "a request that generated nothing (a failed one) is not replayable: drop the row" if value == 0 else ""
        raise InputError(f"{where}: {field} is {value}, not from 1 to {MAX_LEN:,} tokens" + (f": {why}" if why else ""))
    return value


def _seconds(value: object, where: str, field: str) -> float:
    """An arrival time in seconds: a finite number from 0 to MAX_ARRIVAL_S."""
    if isinstance(value, str) and len(value) <= 32:
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where}: {field} is {str(value)[:40]!r}, not a number of seconds")
    if not 0 <= value <= MAX_ARRIVAL_S:
        raise InputError(f"{where}: {field} is {value!r}, not from 0 to {MAX_ARRIVAL_S:g} seconds")
    return float(value)


def _stamp(value: str, where: str) -> float:
    """An Azure TIMESTAMP (2023-11-16 18:15:46.6805900: seven decimals, more than Python's six) as seconds."""
    text = value.strip()
    head, _, frac = text.partition(".")
    try:
        moment = datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise InputError(f"{where}: TIMESTAMP is {text[:40]!r}, not a time as YYYY-MM-DD HH:MM:SS.fffffff") from None
    if frac and not (frac.isdigit() and len(frac) <= 9):
        raise InputError(f"{where}: TIMESTAMP is {text[:40]!r}, not a time as YYYY-MM-DD HH:MM:SS.fffffff")
    return (moment - datetime(1970, 1, 1)).total_seconds() + (int(frac) / 10 ** len(frac) if frac else 0.0)


Lined = list[tuple[int, TraceRow]]  # each row with the line it came from


def _jsonl(lines: list[str], what: str) -> Lined:
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{what} line {n}"
        try:
            data = json.loads(line) if len(line) <= 4096 else None
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise InputError(f"{where}: not a JSON object as {JSONL_EXAMPLE}")
        unknown = sorted(set(data) - JSONL_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown field {unknown[0][:40]!r}; a row has input_len, output_len, arrival_s")
        for field in ("input_len", "output_len"):
            if field not in data:
                raise InputError(f"{where}: {field} is missing")
        arrival = data.get("arrival_s")
        at = None if arrival is None else _seconds(arrival, where, "arrival_s")
        rows.append(
            (
                n,
                TraceRow(
                    _count(data["input_len"], where, "input_len"), _count(data["output_len"], where, "output_len"), at
                ),
            )
        )
    return rows


def _csv(text: str, what: str, columns: tuple[str, ...], kind: TraceFormat) -> Lined:
    reader = csv.reader(io.StringIO(text))
    next(reader)  # the header, checked by the caller
    rows = []
    for n, cells in enumerate(reader, 2):
        if not cells:
            continue
        where = f"{what} line {n}"
        if len(cells) != len(columns):
            raise InputError(f"{where}: {len(cells)} fields, where its header names {len(columns)}")
        row = dict(zip(columns, cells, strict=True))
        stamp, given, made = CSV_FIELDS[kind]
        at = _stamp(row[stamp], where) if kind == "azure" else _seconds(row[stamp], where, stamp)
        rows.append((n, TraceRow(_count(row[given], where, given), _count(row[made], where, made), at)))
    return rows


def format_of(first: str) -> TraceFormat | None:
    """The format a trace's first line says: a JSON object, or one of the CSV headers redline reads."""
    header = tuple(c.strip() for c in first.strip().lstrip("\ufeff").split(","))
    if header == AZURE:
        return "azure"
    if header == BURSTGPT:
        return "burstgpt"
    return "jsonl" if first.lstrip().startswith("{") else None


def parse_trace(text: str, what: str) -> Trace:
    """A trace's rows, checked: InputError naming `what` (the file), the line and the field for a row redline cannot
    replay, a file too big or too long, or arrivals out of order."""
    if len(text) > MAX_TRACE_BYTES:
        raise InputError(f"{what} is {len(text) >> 20} MiB, over the {MAX_TRACE_BYTES >> 20} MiB redline reads")
    lines = text.splitlines()
    if len(lines) > MAX_ROWS + 1:
        raise InputError(f"{what} has {len(lines):,} lines, over the {MAX_ROWS:,} rows a trace may have: take a window")
    kind = format_of(lines[0]) if lines else None
    if kind is None:
        raise InputError(
            f"{what}: its first line is neither a JSON row ({JSONL_EXAMPLE}) nor the header of the Azure LLM "
            f"inference trace ({','.join(AZURE)}) or BurstGPT ({','.join(BURSTGPT)})"
        )
    rows = _jsonl(lines, what) if kind == "jsonl" else _csv(text, what, AZURE if kind == "azure" else BURSTGPT, kind)
    if not rows:
        raise InputError(f"{what} holds no row")
    _in_order(rows, what)
    return Trace(tuple(r for _, r in rows), kind, hashlib.sha256(text.encode()).hexdigest())


def _in_order(rows: Lined, what: str) -> None:
    """Arrivals given for every row or none, and never earlier than the row before."""
    said = [(n, r.arrival_s) for n, r in rows]
    missing = [n for n, at in said if at is None]
    if missing and len(missing) < len(said):
        raise InputError(
            f"{what} line {missing[0]}: arrival_s is missing, where other rows say it: give it for every row"
        )
    for (_, before), (n, at) in zip(said, said[1:], strict=False):
        if at is not None and before is not None and at < before:
            raise InputError(
                f"{what} line {n}: it arrived before the row above it ({at:g} s < {before:g} s): sort the trace "
                "by arrival"
            )


__all__ = ["MAX_ROWS", "MAX_TRACE_BYTES", "Trace", "TraceFormat", "TraceRow", "format_of", "parse_trace"]
