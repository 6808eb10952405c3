"""champion_select judged by the one noise model (policy/noise.py): the basis and the smallest detectable effect
stated, a band measured elsewhere honoured, a champion never resting on an implausible figure."""

from __future__ import annotations

import pytest

from redline.policy import champion as figures
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


def boot(cell: str, k: int, top: float):  # type: ignore[no-untyped-def]
    """The k-th boot of a cell, its focus figure `top` at c=8."""
    return verdict(cell, {1: top / 2, 8: top}).model_copy(update={"replicate": k})


def test_the_boot_to_boot_spread_of_the_replicated_cells_is_the_band_and_turns_a_one_boot_win_into_noise() -> None:
    """The H200's own landscape measured 2-18% between two boots of one cell: a 12% lead of a cell booted once is
    not a win against a spread measured so; every cell is judged by the band pooled over the cells booted twice."""
    cells = [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 55, 8: 110}), verdict("b", {1: 56, 8: 112})]
    replicates = {"base": [boot("base", 2, 84)], "a": [boot("a", 2, 128)]}
    report = select(campaign(), cells, replicates=replicates)
    ranked = {c.cell: c for c in report.ranked}
    # pooled: base 100/84 and a 110/128, each about its own mean: cv 11.5% on 2 df; t(0.025, 2) = 4.303; x sqrt 2
    cv = ((2 * (8 / 92) ** 2 + 2 * (9 / 119) ** 2) / 2) ** 0.5
    assert report.champion is None and report.outcome == "no_improvement"
    # scaled to the boots each mean rests on: a's 2 against the baseline's 2, b's 1 against 2
    for cell, boots in (("a", 2), ("b", 1)):
        assert ranked[cell].outcome == "no_improvement" and ranked[cell].band_source == "measured"
        scale = (1 / 2 + 1 / boots) ** 0.5
        assert ranked[cell].noise_band_pct == pytest.approx(4.303 * cv * scale * 100, abs=0.05)
        assert "the boot-to-boot spread of base (2 boots), a (2 boots): a spread of 12% (cv, 2 df)" in ranked[cell].why
    assert ranked["a"].score == pytest.approx(119) and ranked["b"].score == pytest.approx(112)  # boots' means
    assert "(92 -> 119 tok/s/host)" in ranked["a"].why  # against the baseline's boots' mean


def test_a_difference_beyond_the_measured_band_is_still_named() -> None:
    """A band measured between boots keeps a real difference: on the CPU build mnbt 16 ran at a fifth of mnbt 256."""
    cells = [verdict("base", {1: 100, 8: 200}), verdict("mid", {1: 105, 8: 210}), verdict("slow", {1: 20, 8: 40})]
    report = select(campaign(), cells, replicates={"base": [boot("base", 2, 230)], "mid": [boot("mid", 2, 195)]})
    slow = next(c for c in report.ranked if c.cell == "slow")
    assert slow.outcome == "worse" and slow.band_source == "measured" and "beyond the noise" in slow.why


def test_without_a_replicate_the_band_is_the_default_and_says_nothing_was_measured() -> None:
    report = select(campaign(replicates=0), [verdict("base", {1: 50, 8: 100}), verdict("a", {1: 55, 8: 110})])
    a = next(c for c in report.ranked if c.cell == "a")
    assert a.outcome == "win" and a.band_source == "default" and "replicates: 0, so no cell was booted twice" in a.why
    assert "the 3% band, METHODOLOGY.md's default, assumed" in a.why


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
