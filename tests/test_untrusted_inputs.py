"""Hardening classes 3, 4 and 9 at the readers: parsers in linear time, YAML and JSON files as
untrusted input, and derived paths that are not plain files."""

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engines import get_engine
from redline.errors import InputError, LadderError, LogParseError, TargetConfigError
from redline.inputs import read_text
from redline.ledger import read_ladder
from redline.targets import load_targets
from redline.untrusted import CONFIG_YAML_NODES, MAX_DEPTH, MAX_YAML_BYTES, MAX_YAML_NODES, check_yaml, load_json

VLLM = get_engine("vllm")
HEAD = "(APIServer pid=1) INFO 11-30 09:30:00 [api_server.py:1] vLLM API server version 0.26.0\n"
BOMB = "a: &a [x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefghi", "bcdefghij", strict=True)
)


def pathological(n: int) -> dict[str, str]:
    """Lines built to make a careless regex quadratic: long runs a pattern can start anywhere in."""
    return {
        "digits before a needle": HEAD + "9" * n + " KV cache is needed\n",
        "dots before a needle": HEAD + "." * n + " GiB for peak activation\n",
        "repeated literal": HEAD + "non-default args: {" * (n // 19) + "\n",
        "repeated model arg": HEAD + "non-default args: 'model': " * (n // 27) + "\n",
        "comma run": HEAD + "Maximum concurrency for " + "1," * (n // 2) + "\n",
    }


# ---- class 3: parsers in linear time ------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(pathological(1)))
def test_parsers_in_linear_time_a_megabyte_pathological_line_reads_at_once(kind: str) -> None:
    text = pathological(1_000_000)[kind]
    start = time.perf_counter()
    VLLM.parse_boot_log(text)
    VLLM.served_model(text)
    # A quadratic pattern takes minutes here (the old number pattern took 0.5 s at 10 kB);
    # bench/parse_pathological.py measures the real slope at 1x, 10x and 100x.
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
                "GiB",
                " GiB for weight",
                "KV cache is needed",
                "(",
                "/",
                "Maximum concurrency for ",
                " tokens per request: ",
                "x",
                "\r",
                "\n",
                "non-default args: {",
                "'model': '",
                "}",
                "Free memory on device (",
                "Model loading took ",
                " and ",
                " s",
            ]
        ),
        max_size=60,
    )
)
def test_parsers_in_linear_time_crafted_lines_never_crash_the_reader(parts: list[str]) -> None:
    try:
        VLLM.parse_boot_log(HEAD + "".join(parts))
    except LogParseError:
        pass  # the only error a reader may raise


def test_parsers_in_linear_time_a_bench_result_nested_too_deep_is_an_input_error() -> None:
    with pytest.raises(InputError, match="nests deeper"):
        VLLM.parse_bench_result("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="not JSON"):
        load_json("{", "the bench result")


# ---- class 4: YAML and JSON files as untrusted input ------------------------------------------------


def test_yaml_files_as_untrusted_input_an_alias_bomb_in_a_ladder_is_refused_unexpanded(tmp_path: Path) -> None:
    ladder = tmp_path / "bomb.yml"
    ladder.write_text(BOMB)
    with pytest.raises(LadderError, match=r"alias \(\*a\)"):
        read_ladder(ladder)


def test_yaml_files_as_untrusted_input_a_deep_nest_is_refused_fast(tmp_path: Path) -> None:
    ladder = tmp_path / "deep.yml"
    ladder.write_text("[" * 200_000 + "]" * 200_000)
    start = time.perf_counter()
    with pytest.raises(LadderError, match=f"deeper than {MAX_DEPTH}"):
        read_ladder(ladder)
    assert time.perf_counter() - start < 2.0  # the YAML parser is quadratic in depth: it must stop early


def test_yaml_files_as_untrusted_input_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    ladder = tmp_path / "big.yml"
    with ladder.open("wb") as f:
        f.truncate(MAX_YAML_BYTES + 1)  # sparse: no disk spent
    with pytest.raises(LadderError, match="MiB redline reads"):
        read_ladder(ladder)


def _flat(items: int) -> str:
    """A flow list of `items` items: that many nodes and the list's own."""
    return "[" + "1," * (items - 1) + "1]\n"


def test_yaml_files_as_untrusted_input_a_flat_list_past_the_node_budget_is_refused_naming_it(tmp_path: Path) -> None:
    """Issue 32, item 7: a flat list of millions of items under the size cap is refused before any object is built
    (bench/yaml_budget.py: 15.6 MB of 7.8 million items took 110 s and 1.7 GB to read, and is now refused in about
    half a second); the budget is a count, so the file at it still reads."""
    budget = f"over {MAX_YAML_NODES:,} YAML nodes"
    check_yaml(_flat(MAX_YAML_NODES - 1), "f")  # the list and its items: exactly the budget
    with pytest.raises(InputError, match=budget):
        check_yaml("- 1\n" * (MAX_YAML_NODES + 1), "f")  # a block list: its items and the list's own
    ladder, targets = tmp_path / "flat.yml", tmp_path / "targets.yml"
    ladder.write_text(_flat(MAX_YAML_NODES))
    targets.write_text("targets:\n  here: {kind: local}\nlist: " + _flat(MAX_YAML_NODES))
    with pytest.raises(LadderError, match=f"flat.yml holds {budget}"):
        read_ladder(ladder)
    with pytest.raises(TargetConfigError, match=f"targets.yml holds over {CONFIG_YAML_NODES:,} YAML nodes"):
        load_targets(targets)  # a file a person writes: the smaller budget (docs/security.md, 38.2)


def test_yaml_files_as_untrusted_input_a_targets_file_with_an_alias_is_refused(tmp_path: Path) -> None:
    targets = tmp_path / "targets.yml"
    targets.write_text("targets:\n  a: &t {kind: local}\n  b: *t\n")
    with pytest.raises(TargetConfigError, match="alias"):
        load_targets(targets)


def test_yaml_files_as_untrusted_input_anchors_comments_and_plain_files_still_read() -> None:
    check_yaml("# a comment\na: &keep 1\nb: [1, {c: 2}]\n", "f")  # an anchor alone expands nothing


# ---- class 9: a path that is not a plain file ------------------------------------------------------


def _in_thread(fn, *args):
    """fn(*args) in a thread; (finished, exception) after at most 5 s, so a blocking open fails the test."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            fn(*args)
            box.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    return bool(box), box[0] if box else None


def test_derived_paths_a_fifo_ladder_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "l.yml"
    os.mkfifo(fifo)
    finished, exc = _in_thread(read_ladder, fifo)
    assert finished and isinstance(exc, LadderError) and "not a regular file" in str(exc)


def test_derived_paths_a_fifo_or_device_log_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "boot.log"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        finished, exc = _in_thread(read_text, path)
        assert finished and isinstance(exc, InputError) and "not a regular file" in str(exc), (path, exc)


# ---- issue 19, class 7: bench results are untrusted input ------------------------------------------

BENCH_FLOATS = (
    "duration",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_itl_ms",
    "p99_itl_ms",
)
BENCH_INTS = ("num_prompts", "completed", "failed", "max_concurrency", "total_input_tokens", "total_output_tokens")
# JSON number texts as a hostile bench client (or a hand-edited file) writes them
hostile_numbers = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e300", "-0.5", "-1", "1e13"]),
    st.integers(min_value=10**16, max_value=10**60).map(str),
    st.integers(max_value=-1).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: json.dumps(f)),
    st.sampled_from(['"12"', '"fast"', "true", "null", "[]", "{}", '"NaN"']),
)


def bench_text(fields: dict[str, str]) -> str:
    base = {"num_prompts": "8", "completed": "8", "duration": "1.5", "output_throughput": "100.0"}
    merged = {**base, **fields}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in merged.items()) + "}"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(BENCH_FLOATS + BENCH_INTS), hostile_numbers, min_size=1, max_size=4))
def test_bench_result_untrusted_generated_files_are_refused_naming_the_field_or_read_finite(
    fields: dict[str, str],
) -> None:
    text = bench_text(fields)
    for engine in ("vllm", "sglang"):
        try:
            result = get_engine(engine).parse_bench_result(text)
        except InputError as exc:
            message = str(exc)
            assert "\n" not in message and message.startswith("the bench result")
            assert any(f"{name} is" in message or f"{name}:" in message for name in fields) or "number" in message
            continue
        for name in BENCH_FLOATS + BENCH_INTS:
            value = getattr(result, name)
            assert value is None or (math.isfinite(value) and 0 <= value <= 1 << 53), (name, value)
        assert json.loads(result.model_dump_json())  # the figures dump as strict JSON (no NaN)


@pytest.mark.parametrize(
    ("field", "value"),
    [("median_ttft_ms", "NaN"), ("p99_tpot_ms", "Infinity"), ("output_throughput", "-3"), ("failed", "9" * 5000)],
)
def test_bench_result_untrusted_each_hostile_figure_is_named(field: str, value: str) -> None:
    with pytest.raises(InputError) as caught:
        VLLM.parse_bench_result(bench_text({field: value}))
    assert field in str(caught.value)
