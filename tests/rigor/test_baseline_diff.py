"""perf_baseline_diff's colours (policy/baseline_diff.py): every GREEN, YELLOW and RED case, and the refusal of
contexts that differ, each differing field named."""

from __future__ import annotations

from typing import Any

import pytest

from redline.errors import InputError
from redline.models.baseline import BaselinePoint, BaselineSource
from redline.models.campaign_results import Stat
from redline.models.context import (
    ContextDescriptor,
    EngineIdentity,
    Hardware,
    ModelIdentity,
    Parallelism,
    RegimeLabel,
    Workload,
)
from redline.policy.baseline_diff import diff
from tests.rigor.helpers import context, point

SOURCE = BaselineSource(kind="ab_arm", ref="ab/x.yml", item="cand")


def single(concurrency: int = 16, **metrics: float) -> BaselinePoint:
    """A one-trial point: no spread, so the tolerance is the noise band (basis default or stated)."""
    p = point(concurrency, **metrics)
    return p.model_copy(update={"metrics": {k: Stat(mean=v.mean, n=1, values=[v.mean]) for k, v in p.metrics.items()}})


def colour(**current: float) -> Any:
    return diff("prod", [single()], [single(**current)], SOURCE, tolerance_pct=3.0, loose_band_pct=10.0)


@pytest.mark.parametrize(
    ("current", "expected", "why"),
    [
        ({"output_throughput": 1050.0}, "GREEN", "better by 5.00% (1,000 -> 1,050 tok/s), beyond the noise"),
        ({"output_throughput": 1050.0, "median_tpot_ms": 10.2}, "GREEN", "no guarded metric worse"),  # 2%: inside
        ({"output_throughput": 1010.0}, "YELLOW", "no improvement: output_throughput better by 1.00%"),
        ({"output_throughput": 980.0}, "YELLOW", "worse by 2.00% (1,000 -> 980 tok/s), inside the noise"),
        ({"output_throughput": 1050.0, "median_ttft_ms": 106.0}, "YELLOW", "median_ttft_ms worse by 6.00% beyond"),
        ({"output_throughput": 950.0}, "RED", "output_throughput worse by 5.00% (1,000 -> 950 tok/s), beyond the"),
        (
            {"output_throughput": 1050.0, "median_tpot_ms": 11.5},
            "RED",
            "guarded median_tpot_ms worse by 15.00% beyond the looser band",
        ),
        ({"output_throughput": 1010.0, "median_itl_ms": 9.5}, "RED", "with no focus win to pay for it"),
    ],
)
def test_every_colour(current: dict[str, float], expected: str, why: str) -> None:
    d = colour(**current)
    assert d.colour == expected and why in d.reason, d.reason
    assert {m.noise.basis for m in d.points[0].metrics if m.noise} == {"default"}


def test_a_latency_focus_counts_lower_as_better() -> None:
    d = diff("prod", [single()], [single(median_tpot_ms=9.0)], SOURCE, focus="median_tpot_ms")
    assert d.colour == "GREEN" and d.points[0].metrics[0].delta_pct == pytest.approx(10.0)
    assert "median_tpot_ms better by 10.00% (10 -> 9 ms)" in d.reason
    assert "median_tpot_ms" not in d.guarded


def test_a_rising_latency_is_worse_and_a_falling_one_better_in_words() -> None:
    d = diff("prod", [single(median_tpot_ms=4.81)], [single(median_tpot_ms=7.21, median_itl_ms=5.7)], SOURCE)
    tpot, itl = d.points[0].metrics[1], d.points[0].metrics[2]
    assert tpot.metric == "median_tpot_ms" and tpot.delta_pct == pytest.approx(-49.896, abs=1e-3)
    assert tpot.noise is not None and tpot.noise.change == "worse by 49.90%" and tpot.status == "regressed"
    assert itl.noise is not None and itl.noise.change == "better by 36.67%" and itl.status == "improved"
    assert "worse by 49.90%  regressed" in d.text and "better by 36.67%  improved" in d.text
    assert "-49.90%" not in d.text and "+36.67%" not in d.text


def test_with_trials_a_noisy_difference_beyond_the_tolerance_is_inside_the_noise() -> None:
    """The issue's figures: output throughput 207 ± 80 tok/s over 3 trials, 36.84% lower: RED before, now YELLOW."""
    base = point(output_throughput=207.0)
    base.metrics["output_throughput"] = Stat(mean=207.0, std=80.0, n=3, values=[207.0] * 3)
    current = point(output_throughput=130.74)
    current.metrics["output_throughput"] = Stat(mean=130.74, std=80.0, n=3, values=[130.74] * 3)
    d = diff("prod", [base], [current], SOURCE)
    focus = d.points[0].metrics[0]
    assert d.colour == "YELLOW" and focus.status == "within", d.reason
    assert (
        focus.noise is not None
        and focus.noise.basis == "trials"
        and focus.noise.p_value == pytest.approx(0.31, abs=0.01)
    )
    assert "worse by 36.84%" in d.reason and "inside the noise" in d.reason
    assert focus.noise.mde_pct is not None and focus.noise.mde_pct > 90  # 3 trials at CV 39%: it could see nothing less


def test_a_noise_win_over_the_tolerance_is_not_green() -> None:
    base = point(output_throughput=1000.0)
    base.metrics["output_throughput"] = Stat(mean=1000.0, std=150.0, n=3, values=[1000.0] * 3)
    current = point(output_throughput=1060.0)
    d = diff("prod", [base], [current], SOURCE)
    assert d.colour == "YELLOW" and "better by 6.00%" in d.reason and "inside the noise" in d.reason


def test_one_recorded_spread_sets_the_band_against_a_single_run() -> None:
    """A 3-trial baseline (CV 1%) against a one-run bench file: the baseline's spread is the band (basis measured)."""
    base = point(output_throughput=1000.0)
    base.metrics["output_throughput"] = Stat(mean=1000.0, std=10.0, n=3, values=[990.0, 1000.0, 1010.0])
    d = diff("prod", [base], [single(output_throughput=1040.0)], SOURCE)
    focus = d.points[0].metrics[0]
    assert focus.noise is not None and focus.noise.basis == "measured"
    assert focus.noise.band_pct == pytest.approx(4.303 * 1.0 * (1 / 3 + 1) ** 0.5, abs=0.01)  # t(0.025, 2) x CV
    assert d.colour == "YELLOW" and focus.status == "within"


def test_an_implausible_itl_is_flagged_and_never_decides_a_colour() -> None:
    """The CPU build's ITL: 0.003 ms in a trial against a TPOT of 8 ms is an artefact, not a 99.9% win."""
    base = single(median_tpot_ms=8.0, median_itl_ms=4.0)
    current = point(median_tpot_ms=8.0)
    current.metrics["median_itl_ms"] = Stat(mean=1.34, std=2.3, n=3, values=[0.003, 0.003, 4.0])
    d = diff("prod", [base], [current], SOURCE, focus="median_itl_ms")
    focus = d.points[0].metrics[0]
    assert focus.status == "flagged" and d.colour == "YELLOW" and d.reason.startswith("YELLOW at c=16: no claim")
    rules = {(f.metric, f.rule) for f in d.points[0].flags}
    assert rules == {("median_itl_ms", "itl_below_tpot"), ("median_itl_ms", "spread_over_mean")}
    assert "flagged: median_itl_ms 0.003 ms (current at c=16) is under 1/100 of median_tpot_ms 8 ms" in d.text
    guarded = diff("prod", [base], [current], SOURCE)
    itl = next(m for m in guarded.points[0].metrics if m.metric == "median_itl_ms")
    assert itl.status == "flagged" and "(median_itl_ms flagged implausible: not judged)" in guarded.reason


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
    with pytest.raises(InputError, match=r"no point in common \(baseline c=1; current c=16\)"):
        diff("prod", [point(1, context(1))], [point(16)], SOURCE)
    with pytest.raises(InputError, match="looser band must be at least the tolerance"):
        diff("prod", [point()], [point()], SOURCE, tolerance_pct=5, loose_band_pct=2)


def _named(name: str, ctx: ContextDescriptor | None = None) -> ContextDescriptor:
    ctx = ctx or context(16)
    return ctx.model_copy(update={"workload": ctx.workload.model_copy(update={"name": name})})


def test_points_of_two_workloads_at_one_concurrency_pair_by_workload_never_one_over_the_other() -> None:
    base = [point(16, _named("chat"), output_throughput=1000.0), point(16, _named("long"), output_throughput=500.0)]
    current = [point(16, _named("long"), output_throughput=400.0), point(16, _named("chat"), output_throughput=1000.0)]
    d = diff("prod", base, current, SOURCE)
    assert [(p.baseline_context.workload.name, p.current_context.workload.name, p.colour) for p in d.points] == [
        ("chat", "chat", "YELLOW"),
        ("long", "long", "RED"),
    ]
    only = diff("prod", base, current[1:], SOURCE)
    assert only.unmatched == ["long c=16: only the baseline"]


def test_a_baseline_of_no_named_workload_pairs_each_named_one_by_the_shape_it_sent() -> None:
    old = [point(16, output_throughput=1000.0)]  # recorded before runs named their workloads
    longer = context(16)
    longer = longer.model_copy(update={"workload": longer.workload.model_copy(update={"input_len": 4096})})
    current = [point(16, _named("long", longer), output_throughput=400.0), point(16, _named("chat"))]
    d = diff("prod", old, current, SOURCE)  # chat sent the old run's 1024/128; long's 4096 has no baseline
    assert [(p.baseline_context.workload.name, p.current_context.workload.name) for p in d.points] == [(None, "chat")]
    assert d.points[0].why.startswith("no improvement: output_throughput no change") and d.unmatched == [
        "random 4096/128 c=16: only the current result"
    ]
