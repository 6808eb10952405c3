"""The SGLang reader's memory breakdown against the figures the real H200 logs print.

SGLang prints the weights (`Load weight end. ... mem usage=15.02 GB`), each CUDA graph capture (`Capture target
prefill CUDA graph end. ... mem usage=1.47 GB`), the memory free when the weights began to load (`Load weight
begin. avail mem=139.13 GB`) and the fraction it may take (`mem_fraction_static=0.903` in its arguments dump).
The budget (requested_gib) is that fraction of that memory, and the weights and the KV pool (`K size` + `V size`)
come to it: the check below that the budget is SGLang's own, not a figure made up beside it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redline.engines import get_engine

DATA = Path(__file__).resolve().parent.parent / "data"
SGLANG_LOGS = sorted(
    [*DATA.glob("sglang-*/**/*.log"), *DATA.glob("*-campaign/*/cells/sglang/boot.log")],
    key=lambda p: p.as_posix(),
)
READ = get_engine("sglang").parse_boot_log


def printed(pattern: str, text: str) -> list[float]:
    return [float(g) for g in re.findall(pattern, text)]


def test_the_sglang_logs_are_all_here() -> None:
    assert len(SGLANG_LOGS) == 9


@pytest.mark.parametrize("log", SGLANG_LOGS, ids=lambda p: p.relative_to(DATA).as_posix())
def test_each_figure_is_the_one_the_log_prints(log: Path) -> None:
    text = log.read_text()
    memory = READ(text).memory
    weights = printed(r"Load weight end\. .*?mem usage=([\d.]+) GB", text)
    graphs = printed(r"Capture target \w+ CUDA graph end\. elapsed=[\d.]+ s, mem usage=([\d.]+) GB", text)
    free = printed(r"Load weight begin\. avail mem=([\d.]+) GB", text)
    fraction = printed(r"mem_fraction_static=([\d.]+)", text)
    assert memory.weights_gib == (weights[0] if weights else None)
    assert memory.cudagraph_gib == (pytest.approx(sum(graphs)) if graphs else None)
    if free and fraction:
        assert memory.requested_gib == round(free[0] * fraction[0], 2)
    else:
        assert memory.requested_gib is None
    assert (memory.peak_activation_gib, memory.non_torch_gib, memory.device_total_gib) == (None, None, None)


@pytest.mark.parametrize("log", SGLANG_LOGS, ids=lambda p: p.relative_to(DATA).as_posix())
def test_the_budget_is_what_the_weights_and_the_kv_pool_came_to(log: Path) -> None:
    signals = READ(log.read_text())
    m = signals.memory
    if signals.available_kv_cache_gib is None or m.requested_gib is None or m.weights_gib is None:
        pytest.skip("no KV pool was allocated (the boot failed before it)")
    assert m.weights_gib + signals.available_kv_cache_gib == pytest.approx(m.requested_gib, abs=0.1)


@pytest.mark.parametrize(
    ("name", "weights", "graphs", "requested", "kv_gib"),
    [
        ("good-boot.log", 15.02, 1.47 + 0.21, 125.63, 110.6),  # 0.903 x 139.13; K 55.30 + V 55.30
        ("pool-smaller-than-context.log", 15.02, None, 27.83, 12.74),  # --mem-fraction-static 0.2, graphs off
        ("mem-fraction-too-small.log", 15.02, None, 13.91, None),  # 0.1 x 139.13: less than the weights alone
        ("context-refused.log", None, None, None, None),  # refused before any GPU memory was taken
    ],
)
def test_the_h200_boots_figures(
    name: str, weights: float | None, graphs: float | None, requested: float | None, kv_gib: float | None
) -> None:
    signals = READ((DATA / "sglang-0.5.17-h200" / name).read_text())
    m = signals.memory
    assert (m.weights_gib, m.requested_gib, signals.available_kv_cache_gib) == (weights, requested, kv_gib)
    assert m.cudagraph_gib == (None if graphs is None else pytest.approx(graphs))


def test_a_budget_smaller_than_the_weights_is_the_oom_s_cause() -> None:
    """What the figures are for: the failed boot's budget (13.91 GiB) is below its weights (15.02 GiB)."""
    signals = READ((DATA / "sglang-0.5.17-h200" / "mem-fraction-too-small.log").read_text())
    assert signals.status.value == "oom_kv_cache"
    assert signals.memory.requested_gib is not None and signals.memory.weights_gib is not None
    assert signals.memory.requested_gib < signals.memory.weights_gib
