"""champion_select judged by the one noise model (policy/noise.py): the basis and the smallest detectable effect
stated, a band measured elsewhere honoured, a champion never resting on an implausible figure."""

from __future__ import annotations

import pytest

from redline.policy import champion as figures
from redline.policy.noise import measured_band
from tests.campaign.helpers import campaign, verdict


def select(c, verdicts, **kw):  # type: ignore[no-untyped-def]
    return figures.select_champion(c, [v.cell for v in verdicts], "base", {v.cell: v for v in verdicts}, **kw)


def test_a_one_trial_campaign_says_its_band_is_the_default_and_what_it_could_detect() -> None:
    report = select(campaign(), [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 55, 8: 110})])
    a = next(c for c in report.ranked if c.cell == "a")
    assert a.outcome == "win" and a.noise is not None and (a.noise.basis, a.noise.mde_pct) == ("default", 3.0)
    # the helper's verdicts were measured on a host that showed no GPU: the figure is per host
    assert a.why.startswith("output_throughput_per_gpu better by 10.00% (100 -> 110 tok/s/host), beyond the noise")
    assert report.detectable == "smallest detectable effect: 3% (a, default)"
    assert "; smallest detectable effect: 3% (a, default). DRAFT" in report.note


def test_a_band_measured_on_the_host_turns_a_one_trial_win_into_noise() -> None:
    """The host's run-to-run CV was 15-39%: a 10% lead over one boot each is not a win at 15%."""
    host = measured_band(0.15, trials=3, source="the host's run-to-run CV of 15% over 3 boots")
    report = select(campaign(), [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 55, 8: 110})], band=host)
    a = next(c for c in report.ranked if c.cell == "a")
    assert (a.outcome, a.band_source, report.champion) == ("no_improvement", "measured", None)
    assert a.noise_band_pct == pytest.approx(4.303 * 15 * 2**0.5, abs=1e-2) and "CV of 15%" in a.why


def test_a_cell_whose_focus_spread_exceeds_its_mean_is_not_ranked_and_cannot_be_champion() -> None:
    c = campaign(trials=3)
    report = select(
        c,
        [verdict("base", {1: [50] * 3, 8: [100, 101, 99]}), verdict("a", {1: [50] * 3, 8: [5.0, 600.0, 4.0]})],
    )
    a = next(x for x in report.ranked if x.cell == "a")
    assert a.outcome == "not_ranked" and "not judged, implausible" in a.why and report.champion is None
    assert [(f.metric, f.rule, f.where) for f in report.flags] == [
        ("output_throughput_per_gpu", "spread_over_mean", "a at c=8")
    ]
    assert "Implausible, not ranked on: output_throughput_per_gpu std" in report.note


def test_an_implausible_itl_is_named_but_does_not_stop_a_throughput_ranking() -> None:
    itl = {"median_itl_ms": {1: 0.003, 8: 0.004}, "median_tpot_ms": {1: 8.0, 8: 9.0}}
    report = select(campaign(), [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 55, 8: 110}, extra=itl)])
    a = next(x for x in report.ranked if x.cell == "a")
    assert a.outcome == "win" and {f.rule for f in a.flags} == {"itl_below_tpot"} and report.champion == "a"
    assert "median_itl_ms 0.003 ms (a at c=1) is under 1/100 of median_tpot_ms 8 ms" in report.note
