"""The SGLang reader on crafted logs: linear time on pathological lines, and never an error but LogParseError."""

import contextlib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engines import get_engine
from redline.errors import LogParseError

SGLANG = get_engine("sglang")
HEAD = "[2026-11-30 10:00:00] server_args=ServerArgs(model_path='/models/m', context_length=4096)\n"


def pathological(n: int) -> dict[str, str]:
    """Lines built to make a careless regex quadratic: long runs a pattern can start anywhere in."""
    return {
        "digits before a needle": HEAD + "9" * n + " #tokens: 1, KV Cache is allocated. \n",
        "dots before a needle": HEAD + "." * n + " mem usage=1.0 GB Load weight end. elapsed=\n",
        "repeated pool prefix": HEAD + "KV Cache is allocated. dtype: " * (n // 30) + "\n",
        "repeated weight prefix": HEAD + "Load weight end. elapsed=1 s, " * (n // 30) + "\n",
        "repeated server args": HEAD + "server_args=ServerArgs(model_path='" * (n // 36) + "\n",
        "repeated exception": HEAD + "Error" * (n // 5) + ": x\n",
        "bracket run": "[" + "2026-11-30 10:00:00 " * (n // 20) + "\n" + HEAD,
    }


@pytest.mark.parametrize("kind", sorted(pathological(1)))
def test_a_megabyte_pathological_line_reads_at_once(kind: str) -> None:
    text = pathological(1_000_000)[kind]
    start = time.perf_counter()
    SGLANG.parse_boot_log(text)
    SGLANG.served_model(text)
    SGLANG.boot_seconds(text)
    SGLANG.log_message(text)
    assert time.perf_counter() - start < 5.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "9",
                ".",
                ",",
                " ",
                "\r",
                "\n",
                "[2026-11-30 10:00:00] ",
                "KV Cache is allocated. ",
                "dtype: torch.bfloat16, ",
                "#tokens: ",
                ", K size: ",
                " GB",
                ", V size: ",
                "KV size: ",
                "max_total_num_tokens=",
                ", chunked_prefill_size=",
                "None",
                "-1",
                "server_args=ServerArgs(",
                "model_path='",
                "'",
                "context_length=",
                "Load weight end. elapsed=",
                " s, ",
                "mem usage=",
                "Error: ",
                "Traceback (most recent call last)",
                "The server is fired up and ready to roll!",
                "is greater than the derived context_length",
                "(",
                ")",
                "\x1b[1;33m",
            ]
        ),
        max_size=60,
    )
)
def test_crafted_lines_never_crash_the_reader(parts: list[str]) -> None:
    text = HEAD + "".join(parts)
    with contextlib.suppress(LogParseError):  # the only error a reader may raise
        SGLANG.parse_boot_log(text)
    SGLANG.served_model(text)
    SGLANG.boot_seconds(text)
