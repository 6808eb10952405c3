"""champion_select, the verdict of a cell and the table, as pure functions of recorded verdicts."""

from __future__ import annotations

import pytest

from redline.models.campaign_results import ConcurrencyResult, SlaCheck
from redline.policy import champion as figures
from redline.policy.figures import metrics_of, summarize
from tests.campaign.helpers import campaign, verdict

CELLS = ["base", "a", "b", "c"]


def select(c, verdicts, cells=None, baseline="base", top=3):  # type: ignore[no-untyped-def]
    names = cells or [v.cell for v in verdicts]
    return figures.select_champion(c, names, baseline, {v.cell: v for v in verdicts}, top=top)


def test_the_best_win_beyond_the_noise_band_is_the_champion_and_a_draft() -> None:
    report = select(
        campaign(),
        [
            verdict("base", {1: 50, 8: 100}),
            verdict("a", {1: 55, 8: 110}),
            verdict("b", {1: 50, 8: 102}),
            verdict("c", {1: 40, 8: 90}),
        ],
    )
    assert report.champion == "a" and report.outcome == "improvement"
    assert report.rigor == "DRAFT" and "DRAFT" in report.note and "same-node A/B" in report.note
    outcomes = {c.cell: (c.outcome, c.delta_pct, c.at_concurrency) for c in report.ranked}
    assert outcomes == {
        "a": ("win", 10.0, 8),
        "b": ("no_improvement", 2.0, 8),
        "base": ("baseline", None, 8),
        "c": ("worse", -10.0, 8),
    }
    assert report.top == ["a", "b", "base"]
    assert all(c.noise_band_pct == 3.0 and c.band_source == "default" for c in report.ranked if c.cell != "base")


@pytest.mark.parametrize("score", [97.1, 102.9, 103.0])  # 100 / 97.1 = 1.0299: a band is a factor either way
def test_a_cell_inside_the_default_band_is_no_improvement_never_a_win(score: float) -> None:
    report = select(campaign(), [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 50, 8: score})])
    assert report.champion is None and report.outcome == "no_improvement"
    assert report.note.startswith("no improvement: no cell beat the baseline by more than the noise band")
    assert report.ranked[0 if score > 100 else 1].outcome in ("no_improvement", "baseline")
    assert next(c for c in report.ranked if c.cell == "a").outcome == "no_improvement"


def test_with_trials_the_band_comes_from_their_spread() -> None:
    c = campaign(trials=3)
    noisy = select(c, [verdict("base", {1: [50] * 3, 8: [100, 110, 90]}), verdict("a", {1: [50] * 3, 8: [115] * 3})])
    a = next(x for x in noisy.ranked if x.cell == "a")
    # Welch's test at 0.05: a difference is real beyond t(0.025, df 2) x the standard error, 4.303 x 5.77 = 24.8%
    assert (a.band_source, a.noise_band_pct, a.outcome) == ("trials", 24.841, "no_improvement")
    assert a.noise is not None and a.noise.p_value is not None and a.noise.p_value > 0.05
    tight = select(c, [verdict("base", {1: [50] * 3, 8: [100, 101, 99]}), verdict("a", {1: [50] * 3, 8: [103] * 3})])
    a = next(x for x in tight.ranked if x.cell == "a")
    assert (a.band_source, a.noise_band_pct, a.outcome) == ("trials", 2.484, "win") and tight.champion == "a"
    assert "smallest detectable effect" in tight.note and tight.detectable is not None


def test_a_campaign_may_state_its_own_band() -> None:
    report = select(campaign(noise_band_pct=12), [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 50, 8: 110})])
    a = next(x for x in report.ranked if x.cell == "a")
    assert (a.band_source, a.outcome, report.champion) == ("campaign", "no_improvement", None)


def test_cells_of_another_regime_are_never_ranked_against_the_baseline() -> None:
    report = select(
        campaign(),
        [
            verdict("base", {1: 50, 8: 100}),
            verdict("eager", {1: 90, 8: 180}, graphs="eager"),
            verdict("cold", {1: 90, 8: 170}, cache="cold"),
            verdict("a", {1: 50, 8: 101}),
        ],
    )
    assert report.champion is None and report.regime == "warm/graphs"
    assert [c.cell for c in report.ranked] == ["a", "base"]
    groups = {g.regime: [c.cell for c in g.cells] for g in report.other_regimes}
    assert groups == {"warm/eager": ["eager"], "cold/graphs": ["cold"]}
    for group in report.other_regimes:
        assert all(c.outcome == "not_ranked" and c.delta_pct is None for c in group.cells)
        assert "never ranked against the champion" in group.note


def test_red_and_pending_cells_are_excluded_with_their_reason() -> None:
    report = select(
        campaign(),
        [
            verdict("base", {1: 50, 8: 100}),
            verdict("a", {1: 90, 8: 200}, verdict="red", reason="boot failed: oom_cuda: ..."),
        ],
        cells=["base", "a", "b"],
    )
    assert {c.cell: c.why for c in report.excluded} == {"a": "red: boot failed: oom_cuda: ...", "b": "no verdict yet"}
    assert report.champion is None and report.outcome == "no_results"


def test_a_red_baseline_means_no_cell_can_be_called_an_improvement() -> None:
    report = select(
        campaign(), [verdict("base", {1: 50, 8: 100}, verdict="red", reason="SLA ..."), verdict("a", {1: 90, 8: 200})]
    )
    assert report.outcome == "no_baseline" and report.champion is None
    assert "the baseline cell 'base' is red" in report.note


def test_latency_ranks_the_geometric_mean_of_median_tpot_lower_is_better() -> None:
    c = campaign(focus="latency")
    m = "median_tpot_ms"
    report = select(
        c,
        [
            verdict("base", {1: 10, 8: 40}, metric=m),
            verdict("a", {1: 9, 8: 36}, metric=m),
            verdict("b", {1: 5, 8: 82}, metric=m),
        ],
    )
    scores = {x.cell: round(x.score, 3) for x in report.ranked}
    assert scores == {"base": 20.0, "a": 18.0, "b": 20.248}  # b's c=1 win is undone by its c=8 loss
    assert report.champion == "a" and report.direction == "lower"
    assert next(x for x in report.ranked if x.cell == "a").delta_pct == 10.0


def test_goodput_scores_only_the_concurrencies_inside_the_sla() -> None:
    c = campaign(focus="goodput", sla={"p99_ttft_ms": 500}, concurrencies=[1, 8, 32])
    base = verdict("base", {1: 50, 8: 100, 32: 300}, sla_ok={32: False})
    a = verdict("a", {1: 50, 8: 130, 32: 400}, sla_ok={32: False})
    report = select(c, [base, a])
    assert {x.cell: (x.score, x.at_concurrency) for x in report.ranked} == {"a": (130, 8), "base": (100, 8)}
    assert report.champion == "a"


# ---- a cell's verdict ------------------------------------------------------------------------------------------------


def _result(c: int, ok: bool = True, sla: list[SlaCheck] | None = None) -> ConcurrencyResult:
    sla = sla or []
    return ConcurrencyResult(
        concurrency=c,
        num_prompts=2 * c,
        ok=ok,
        reason=None if ok else "3 of 16 requests failed",
        sla=sla,
        sla_ok=all(s.ok for s in sla),
    )


BREACH = SlaCheck(metric="p99_ttft_ms", limit=500, kind="max", value=812.5, ok=False)


@pytest.mark.parametrize(
    ("kwargs", "verdict_", "reason"),
    [
        (
            {"boot_ok": False, "boot_reason": "oom_cuda: CUDA out of memory"},
            "red",
            "boot failed: oom_cuda: CUDA out of memory",
        ),
        ({"warmup_error": "no result file"}, "red", "warm-up failed: no result file"),
        ({"results": [_result(1), _result(8, ok=False)]}, "red", "concurrency 8: 3 of 16 requests failed"),
        ({"results": [_result(1), _result(8, sla=[BREACH])]}, "red", "SLA at concurrency 8: p99_ttft_ms 812.5 > 500"),
        ({"results": [_result(1), _result(8)]}, "green", "every request completed at every concurrency"),
    ],
)
def test_judge(kwargs: dict, verdict_: str, reason: str) -> None:
    args = {"boot_ok": True, "boot_reason": "", "warmup_error": None, "results": [], **kwargs}
    assert figures.cell_verdict(campaign(), **args) == (verdict_, reason)


def test_goodput_is_red_only_when_no_concurrency_stays_inside_the_sla() -> None:
    c = campaign(focus="goodput", sla={"p99_ttft_ms": 500})
    partial = figures.cell_verdict(
        c, boot_ok=True, boot_reason="", warmup_error=None, results=[_result(1), _result(8, sla=[BREACH])]
    )
    assert partial[0] == "green"
    none = figures.cell_verdict(c, boot_ok=True, boot_reason="", warmup_error=None, results=[_result(8, sla=[BREACH])])
    assert none == ("red", "SLA: no concurrency stayed inside it (goodput needs at least one)")


def test_sla_checks_are_maxima_on_latencies_and_minima_on_throughputs() -> None:
    stats = summarize([{"p99_ttft_ms": 400.0, "output_throughput": 90.0}])
    checks = {
        c.metric: (c.kind, c.ok)
        for c in figures.sla_checks(stats, {"p99_ttft_ms": 500, "output_throughput": 100, "median_itl_ms": 5})
    }
    assert checks == {
        "p99_ttft_ms": ("max", True),
        "output_throughput": ("min", False),
        "median_itl_ms": ("max", False),
    }


def test_derived_metrics_are_per_gpu_and_per_user() -> None:
    from redline.models import BenchResult, ServeConfig

    result = BenchResult(num_prompts=8, completed=8, duration=2.0, output_throughput=1000.0, median_tpot_ms=20.0)
    metrics = metrics_of(result, ServeConfig(model="m", max_model_len=4096, tensor_parallel_size=4))
    assert metrics["output_throughput_per_gpu"] == 250.0 and metrics["tokens_per_s_per_user"] == 50.0
    assert "p99_ttft_ms" not in metrics  # not measured: left out, never a zero


# ---- the table and the Pareto front ----------------------------------------------------------------------------------


def test_the_table_has_one_row_per_cell_and_concurrency_with_the_missing_cells_named() -> None:
    verdicts = {v.cell: v for v in [verdict("base", {1: 50, 8: [90, 110]}), verdict("a", {1: 55, 8: 120})]}
    table = figures.campaign_table(campaign(trials=2), ["base", "a", "b"], verdicts)
    assert [(r.cell, r.concurrency, r.focus_value) for r in table.rows] == [
        ("base", 1, 50),
        ("base", 8, 100),
        ("a", 1, 55),
        ("a", 8, 120),
    ]
    assert table.rows[1].focus_std == pytest.approx(14.142, abs=1e-3)
    assert table.missing == ["b"] and table.focus_metric == "output_throughput_per_gpu"


def test_the_pareto_front_keeps_the_points_nothing_beats_on_both_axes() -> None:
    points = [(100, 50), (200, 40), (150, 45), (120, 30), (200, 20), (50, 60)]
    assert figures.pareto_front(points) == [(200, 40), (150, 45), (100, 50), (50, 60)]
