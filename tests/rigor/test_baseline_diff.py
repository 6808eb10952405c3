"""perf_baseline_diff's colours (policy/baseline_diff.py): every GREEN, YELLOW and RED case, and the refusal of
contexts that differ, each differing field named."""

from __future__ import annotations

from typing import Any

import pytest

from redline.errors import InputError
from redline.models.baseline import BaselineSource
from redline.models.context import EngineIdentity, Hardware, ModelIdentity, Parallelism, RegimeLabel, Workload
from redline.policy.baseline_diff import diff
from tests.rigor.helpers import context, point

SOURCE = BaselineSource(kind="ab_arm", ref="ab/x.yml", item="cand")


def colour(**current: float) -> Any:
    return diff("prod", [point()], [point(**current)], SOURCE, tolerance_pct=3.0, loose_band_pct=10.0)


@pytest.mark.parametrize(
    ("current", "expected", "why"),
    [
        ({"output_throughput": 1050.0}, "GREEN", "improved +5.00% and no guarded metric regressed"),
        ({"output_throughput": 1050.0, "median_tpot_ms": 10.2}, "GREEN", "no guarded metric regressed"),  # -2%: inside
        ({"output_throughput": 1010.0}, "YELLOW", "within the tolerance (no improvement)"),
        ({"output_throughput": 980.0}, "YELLOW", "within the tolerance"),
        ({"output_throughput": 1050.0, "median_ttft_ms": 106.0}, "YELLOW", "regressed inside the looser band"),
        ({"output_throughput": 950.0}, "RED", "output_throughput regressed -5.00%, beyond the tolerance"),
        (
            {"output_throughput": 1050.0, "median_tpot_ms": 11.5},
            "RED",
            "median_tpot_ms -15.00% regressed beyond the looser band",
        ),
        ({"output_throughput": 1010.0, "median_itl_ms": 9.5}, "RED", "with no focus win to pay for it"),
    ],
)
def test_every_colour(current: dict[str, float], expected: str, why: str) -> None:
    d = colour(**current)
    assert d.colour == expected and why in d.reason, d.reason


def test_a_latency_focus_counts_lower_as_better() -> None:
    d = diff("prod", [point()], [point(median_tpot_ms=9.0)], SOURCE, focus="median_tpot_ms")
    assert d.colour == "GREEN" and d.points[0].metrics[0].delta_pct == pytest.approx(10.0)
    assert "median_tpot_ms" not in d.guarded


def test_the_worst_point_decides_and_each_metric_is_printed_with_both_contexts() -> None:
    base = [point(1, context(1)), point(16)]
    current = [
        point(1, context(1), output_throughput=1100.0),
        point(16, output_throughput=900.0),
        point(64, context(64)),
    ]
    d = diff("prod", base, current, SOURCE)
    assert [p.colour for p in d.points] == ["GREEN", "RED"] and d.colour == "RED" and d.reason.startswith("RED at c=16")
    assert d.unmatched == ["c=64: only the current result"]
    for p in d.points:
        assert p.baseline_context.workload.concurrency == p.current_context.workload.concurrency == p.concurrency
    text = d.text
    assert text.count("baseline prod: measured: /models/llama8b on 1 x NVIDIA H200, vllm 0.26.0") == 2
    assert "current  ab arm ab/x.yml (cand)" in text and "1,100.000 ± 1.000 (n=3)" in text


MISMATCHES = {
    "model": {"model": ModelIdentity(name="/models/qwen32b", config_hash="sha256:abc")},
    "model.config_hash": {"model": ModelIdentity(name="/models/llama8b", config_hash="sha256:def")},
    "hardware.gpu_name": {"hardware": Hardware(gpu_name="NVIDIA B200", gpu_count=1)},
    "hardware.gpu_count": {"hardware": Hardware(gpu_name="NVIDIA H200", gpu_count=2)},
    "engine.version": {"engine": EngineIdentity(name="vllm", version="0.27.0")},
    "workload.input_len": {"workload": Workload(input_len=2048, output_len=128, concurrency=16, num_prompts=64)},
    "workload.num_prompts": {"workload": Workload(input_len=1024, output_len=128, concurrency=16, num_prompts=32)},
    "regime.cache": {"regime": RegimeLabel(cache="cold", graphs="graphs")},
    "regime.graphs": {"regime": RegimeLabel(cache="warm", graphs="eager")},
    "parallelism.tp": {"parallelism": Parallelism(tp=2)},
}


@pytest.mark.parametrize("field", MISMATCHES)
def test_contexts_that_differ_are_refused_naming_the_field(field: str) -> None:
    current = point(16, context(16, **MISMATCHES[field]), output_throughput=2000.0)
    with pytest.raises(InputError) as exc:
        diff("prod", [point()], [current], SOURCE)
    text = str(exc.value)
    assert text.startswith("refused: the contexts differ") and f"c=16 {field}:" in text


def test_every_differing_field_is_listed_at_once() -> None:
    newer = EngineIdentity(name="vllm", version="0.27.0")
    current = point(16, context(16, engine=newer, parallelism=Parallelism(tp=2)))
    with pytest.raises(InputError) as exc:
        diff("prod", [point()], [current], SOURCE)
    assert "engine.version: '0.26.0' vs '0.27.0'" in str(exc.value) and "parallelism.tp: 1 vs 2" in str(exc.value)


def test_an_unknown_config_hash_is_not_a_difference_and_the_serve_config_may_differ() -> None:
    ctx = context(16, model=ModelIdentity(name="/models/llama8b"))
    ctx = ctx.model_copy(update={"serve": ctx.serve.model_copy(update={"kv_cache_dtype": "fp8"})})
    assert diff("prod", [point()], [point(16, ctx, output_throughput=1100.0)], SOURCE).colour == "GREEN"


def test_no_common_concurrency_and_a_loose_band_below_the_tolerance_are_refused() -> None:
    with pytest.raises(InputError, match="no concurrency in common"):
        diff("prod", [point(1, context(1))], [point(16)], SOURCE)
    with pytest.raises(InputError, match="looser band must be at least the tolerance"):
        diff("prod", [point()], [point()], SOURCE, tolerance_pct=5, loose_band_pct=2)
