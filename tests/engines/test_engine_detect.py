"""engines/detect.py on every real boot log in tests/data: each is told to be the engine that printed it, and the
reader of that engine takes it; a text of neither engine, or as much of both, is told to be none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from redline.engines import engine_names, get_engine
from redline.engines.detect import SCANNED, SIGNATURES, detect_engine, signatures_in
from redline.ops.requests import ParseBootLogRequest

DATA = Path(__file__).resolve().parent.parent / "data"
LOGS = sorted(p for p in DATA.rglob("*.log"))


def printed_by(log: Path) -> str:
    """The engine that printed a fixture, from where it lies: the SGLang folders, and the SGLang cell of the
    cross-engine campaign; every other log in tests/data is vLLM's (the H200 and CPU builds)."""
    rel = log.relative_to(DATA).as_posix()
    return "sglang" if rel.startswith("sglang-") or "/cells/sglang/" in rel else "vllm"


def test_the_fixtures_hold_both_engines_logs() -> None:
    by_engine = [printed_by(log) for log in LOGS]
    assert len(LOGS) >= 40 and by_engine.count("sglang") >= 9 and by_engine.count("vllm") >= 30


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.relative_to(DATA).as_posix())
def test_every_real_log_is_told_to_be_its_engine_s_and_its_reader_takes_it(log: Path) -> None:
    text = log.read_text()
    engine = printed_by(log)
    assert detect_engine(text) == engine
    counts = signatures_in(text)
    assert counts[engine] >= 2 and all(n == 0 for other, n in counts.items() if other != engine)
    assert get_engine(engine).parse_boot_log(text).engine == engine  # the detected reader accepts it
    assert ParseBootLogRequest(text=text).engine == engine  # the request's `auto` resolves the same way


def test_every_engine_has_signatures_and_no_signature_is_shared() -> None:
    assert set(SIGNATURES) == set(engine_names())
    markers = [m for ms in SIGNATURES.values() for m in ms]
    assert len(markers) == len(set(markers))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello\nworld\n",
        "[project]\nname = 'redline'\nversion = '1.0'\n",  # " version " alone is no engine's
        'Traceback (most recent call last):\n  File "/usr/lib/python3.11/site-packages/torch/cuda.py"\n',
    ],
)
def test_a_text_of_neither_engine_is_none(text: str) -> None:
    assert detect_engine(text) is None


def test_as_many_lines_of_each_engine_is_none_and_more_of_one_is_that_one() -> None:
    vllm = "(APIServer pid=1) INFO Starting vLLM server\n"
    sglang = "[2026-12-01 04:46:18] server_args=ServerArgs(model_path='/m')\n"
    assert detect_engine(vllm + sglang) is None  # one signature each: a tie, not a guess
    assert detect_engine(vllm + sglang + "The server is fired up and ready to roll!\n") == "sglang"


def test_only_the_first_scanned_characters_are_read() -> None:
    assert detect_engine("x" * SCANNED + "(APIServer pid=1) non-default args: {}") is None
    assert detect_engine("x" * (SCANNED - 100) + "(APIServer pid=1) non-default args: {}") == "vllm"


def test_parse_log_at_a_terminal_reads_an_sglang_log_without_its_engine_named() -> None:
    """The CLI, as a person runs it: no --engine, and the SGLang log is read as SGLang's with its memory line."""
    log = DATA / "sglang-0.5.17-h200" / "good-boot.log"
    done = subprocess.run(
        [sys.executable, "-m", "redline", "parse-log", str(log)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "status      boot_ok  (sglang" in done.stdout
    assert "memory      weights 15.02 GiB, cudagraph 1.68 GiB, requested 125.63 GiB" in done.stdout
    assert "not a vLLM boot log" not in done.stdout + done.stderr
