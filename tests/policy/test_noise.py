"""The one noise model (policy/noise.py) on its own: the basis it picks, the band and the smallest detectable effect
it states (worked by hand), the flags it raises on implausible figures, and the one metric table every list of metric
names reads (models/metrics.py)."""

from __future__ import annotations

import math
import statistics
import typing
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.models import ab as ab_models
from redline.models.metrics import DIRECTIONS, METRICS, change_words
from redline.ops import requests_evidence
from redline.policy import baseline_diff, verdict_rules
from redline.policy.noise import Sample, compare, flags_of, measured_band, stated_band
from redline.policy.welch import t_quantile, welch

TRIALS = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab" / "ab" / "l8b-mnbt" / "trials"


def throughputs(arm: str) -> list[float]:
    files = sorted(TRIALS.glob(f"{arm}-*/bench-c128.json"))
    return [get_engine("vllm").parse_bench_result(f.read_text()).output_throughput for f in files]


def test_with_trials_on_both_sides_it_is_welchs_test_with_its_band_and_detectable_effect_by_hand() -> None:
    base, cur = throughputs("mnbt2048"), throughputs("mnbt8192")  # 2,885.21 ± 189.91 and 3,020.26 ± 49.75
    j = compare("output_throughput", Sample.of(base), Sample.of(cur))
    test = welch(cur, base)
    assert test is not None and (j.basis, j.p_value, j.outcome) == (
        "trials",
        pytest.approx(test.p_value),
        "inside_noise",
    )
    se = math.sqrt(statistics.variance(base) / 3 + statistics.variance(cur) / 3)
    assert j.band_pct == pytest.approx(t_quantile(0.025, test.df) * se / statistics.mean(base) * 100, abs=1e-3)
    pooled = math.sqrt((statistics.variance(base) + statistics.variance(cur)) / 2)
    mde = (t_quantile(0.025, test.df) + t_quantile(0.2, test.df)) * pooled * math.sqrt(2 / 3)
    assert j.mde_pct == pytest.approx(mde / statistics.mean(base) * 100, abs=1e-3)
    assert round(j.delta_pct, 2) == 4.68 and round(j.band_pct, 1) == 15.1 and round(j.mde_pct, 1) == 19.1
    assert j.change == "better by 4.68%" and "inside the noise (Welch's t-test p = 0.343 >= 0.05)" in j.says
    assert "smallest detectable effect 19.1% (n = 3 + 3, trials)" in j.says


def test_the_quantiles_are_the_t_table() -> None:
    assert t_quantile(0.025, 4) == pytest.approx(2.776, abs=1e-3) and t_quantile(0.2, 4) == pytest.approx(0.941, 1e-3)
    assert t_quantile(0.025, 2) == pytest.approx(4.303, abs=1e-3) and t_quantile(0.025, 1e9) == pytest.approx(
        1.960, 1e-3
    )


def test_the_basis_is_trials_then_one_spread_then_the_band_given_then_the_default() -> None:
    three, one = Sample.of([990.0, 1000.0, 1010.0]), Sample.of([1040.0])
    assert compare("output_throughput", three, Sample.of([1040.0, 1041.0])).basis == "trials"
    measured = compare("output_throughput", three, one)
    assert measured.basis == "measured" and measured.band_pct == pytest.approx(4.303 * 1.0 * math.sqrt(4 / 3), 1e-3)
    host = measured_band(0.15, trials=3, source="the host's run-to-run CV of 15%")
    j = compare("output_throughput", Sample.of([1000.0]), one, band=host)
    assert (j.basis, j.outcome) == ("measured", "inside_noise") and j.band_pct == pytest.approx(
        4.303 * 15 * 2**0.5, 1e-3
    )
    stated = compare("output_throughput", Sample.of([1000.0]), one, band=stated_band(5.0, "the campaign's 5%"))
    assert (stated.basis, stated.band_pct, stated.outcome) == ("stated", 5.0, "inside_noise")
    default = compare("output_throughput", Sample.of([1000.0]), one)
    assert (default.basis, default.band_pct, default.mde_pct, default.outcome) == ("default", 3.0, 3.0, "better")
    assert compare("output_throughput", Sample.of([]), one).outcome == "untestable"


def test_one_sign_convention_by_the_metrics_direction() -> None:
    rising_tpot = compare("median_tpot_ms", Sample.of([4.81]), Sample.of([7.21]))
    falling_itl = compare("median_itl_ms", Sample.of([5.7]), Sample.of([3.6]))
    assert (rising_tpot.outcome, rising_tpot.change) == ("worse", "worse by 49.90%")
    assert (falling_itl.outcome, falling_itl.change) == ("better", "better by 36.84%")
    assert change_words(0.001) == "no change" and change_words(-12.0, 0) == "worse by 12%"


def test_an_itl_orders_of_magnitude_below_the_tpot_and_a_spread_over_the_mean_are_flagged() -> None:
    """The CPU build: median ITL 0.003 ms in some trials and 3-5 ms in others, against a TPOT of 8 ms."""
    figures = {"median_tpot_ms": Sample.of([8.1, 7.9, 8.0]), "median_itl_ms": Sample.of([0.003, 4.2, 0.003])}
    flags = flags_of("cand at c=2", figures)
    assert [(f.metric, f.rule) for f in flags] == [
        ("median_itl_ms", "itl_below_tpot"),
        ("median_itl_ms", "spread_over_mean"),
    ]  # one flag per rule and metric: the ITL under the floor too is named once, by the sharper rule
    assert "median_itl_ms 0.003 ms (cand at c=2) is under 1/100 of median_tpot_ms 8 ms" in flags[0].why
    j = compare("median_itl_ms", Sample.of([4.0, 4.1, 3.9]), figures["median_itl_ms"], flags=flags)
    assert j.outcome == "flagged" and "not judged, implausible" in j.says
    sane = {"median_tpot_ms": Sample.of([8.1, 7.9]), "median_itl_ms": Sample.of([7.5, 7.7])}
    assert flags_of("base at c=2", sane) == []


def test_a_token_time_under_the_floor_is_flagged_on_its_metric_alone() -> None:
    """The UX run's A/B: one trial's median TPOT 0.0026 ms beside 4.40 and 4.84 (its tokens reached the client together)."""
    figures = {"median_tpot_ms": Sample.of([4.40, 0.0026, 4.84]), "median_ttft_ms": Sample.of([30.1, 29.8, 30.4])}
    (flag,) = flags_of("b at c=4", figures)
    assert (flag.metric, flag.rule) == ("median_tpot_ms", "under_floor") and "reached the client together" in flag.why
    j = compare("median_tpot_ms", Sample.of([4.5, 4.6, 4.4]), figures["median_tpot_ms"], flags=[flag])
    assert j.outcome == "flagged"  # never claimed on


def _literal_names(alias: object) -> set[str]:
    return set(typing.get_args(alias))


def test_every_list_of_metric_names_reads_the_one_table() -> None:
    assert set(ab_models.TRIAL_METRICS) <= set(METRICS) and _literal_names(ab_models.Metric) <= set(METRICS)
    assert _literal_names(requests_evidence.Metric) <= set(METRICS)
    assert set(verdict_rules.LATENCY_METRICS + verdict_rules.THROUGHPUT_METRICS) <= set(METRICS)
    assert set(baseline_diff.DEFAULT_GUARDED) <= set(METRICS)
    assert all(m.unit for m in METRICS.values()) and {
        DIRECTIONS["median_tpot_ms"],
        DIRECTIONS["output_throughput"],
    } == {
        "lower",
        "higher",
    }
