"""A campaign's green cell ranked against its baseline cell by the one noise model (policy/noise.py): the cell's
score as a sample (mean, spread, trials), its implausible figures, and the call (win, worse, no improvement, or not
ranked on a flagged figure) with its basis and the smallest effect it could detect. policy/champion.py orders them.

The noise that matters is boot-to-boot: a campaign boots its top cells again (`replicates`), and the spread of their
boots, pooled, is the band every cell is judged by (`campaign_band`): a cell's score is then the mean of its boots,
its benches' spread on one boot set aside (it is not the noise between boots). Only where no cell was booted twice
is the band the campaign's noise_band_pct, else the 3% default, and the band says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from redline.models.campaign import FOCUS_METRIC, Campaign
from redline.models.campaign_results import CellVerdict, RankedCell, Stat
from redline.models.metrics import MetricFlag, NoiseJudgement
from redline.models.workloads import Load, load_of
from redline.policy import noise
from redline.policy.boots import green_boots
from redline.policy.noise import Band, Sample, flags_of, flags_on

BAND_SOURCE = {
    "trials": "trials",
    "measured": "measured",
    "earlier": "earlier",
    "stated": "campaign",
    "default": "default",
}


def _cv(s: Stat) -> float | None:
    return s.std / s.mean if s.std is not None and s.mean else None


def cell_sample(campaign: Campaign, verdict: CellVerdict) -> tuple[Sample | None, Load | None]:
    """A green cell's score as a sample (its mean, spread and boots or benches), and the load point (a concurrency, or
    a rate) it came from. Latency: the geometric mean of the load points' means, with the largest coefficient of
    variation among them.
    Read from the cell over its boots (policy/boots.py over_boots), it is the mean of its boots."""
    metric = FOCUS_METRIC[campaign.focus]
    usable = [r for r in verdict.results if r.ok and metric in r.metrics]
    if campaign.focus == "goodput":
        usable = [r for r in usable if r.sla_ok]  # slo_goodput's metric counts each request against the SLA itself
    if not usable:
        return None, None
    if campaign.focus == "latency":
        if len(usable) != sum(len(campaign.points_of(w)) for w in {r.workload for r in verdict.results}):
            return None, None
        score = math.exp(statistics.fmean(math.log(r.metrics[metric].mean) for r in usable))
        cvs = [cv for r in usable if (cv := _cv(r.metrics[metric])) is not None]
        n = min(r.metrics[metric].n for r in usable)
        return Sample(mean=score, std=max(cvs) * score if cvs and n > 1 else None, n=n), None
    best = max(usable, key=lambda r: r.metrics[metric].mean)
    return Sample.of_stat(best.metrics[metric]), load_of(best)


def cell_flags(verdict: CellVerdict) -> list[MetricFlag]:
    """The implausible figures of one cell, at every concurrency."""
    return [
        f
        for r in verdict.results
        for f in flags_of(
            f"{verdict.cell}{f' on {r.workload}' if r.workload else ''} at {load_of(r).label}",
            {m: Sample.of_stat(s) for m, s in r.metrics.items()},
        )
    ]


def boot_scores(campaign: Campaign, verdict: CellVerdict, replicates: Sequence[CellVerdict]) -> list[float]:
    """The cell's score on each of its boots that has one (its first, then its replicates)."""
    samples = [cell_sample(campaign, v)[0] for v in green_boots(verdict, replicates)]
    return [s.mean for s in samples if s is not None and s.mean is not None]


def _judged(
    campaign: Campaign, cell: Sample, base: Sample, flags: list[MetricFlag], band: Band, per: str = "GPU"
) -> NoiseJudgement:
    focus = FOCUS_METRIC[campaign.focus]
    return noise.compare(focus, base, cell, band=band, flags=flags_on(focus, flags), per=per)


OUTCOME = {"better": "win", "worse": "worse", "inside_noise": "no_improvement", "flagged": "not_ranked"}


def rank(
    campaign: Campaign,
    name: str,
    verdict: CellVerdict,
    base: tuple[Sample, list[MetricFlag]] | None,
    baseline: str,
    band: Band,
) -> RankedCell:
    """One green cell (read over its boots: policy/boots.py over_boots) against the baseline's score, by `band`."""
    sample, at = cell_sample(campaign, verdict)
    flags = cell_flags(verdict)
    ranked = RankedCell(
        cell=name,
        engine=verdict.context.engine.name,
        regime=verdict.context.regime.label,
        score=None if sample is None else sample.mean,
        at_concurrency=at.concurrency if at is not None else None,
        at_rate=at.rate if at is not None else None,
        at_speedup=at.speedup if at is not None else None,
        outcome="excluded",
        why="no figure of the focus metric to rank it by",
        flags=flags,
    )
    if sample is None or sample.mean is None:
        return ranked
    if name == baseline:
        return ranked.model_copy(update={"outcome": "baseline", "why": "the cell the others are compared with"})
    if base is None or base[0].mean is None:
        return ranked.model_copy(update={"outcome": "not_ranked", "why": "the baseline has no result to compare with"})
    j = _judged(campaign, sample, base[0], [*flags, *base[1]], band, verdict.context.device)
    update: dict[str, Any] = {"delta_pct": None if j.delta_pct is None else round(j.delta_pct, 3), "noise": j}
    update |= {"noise_band_pct": None if j.band_pct is None else round(j.band_pct, 3)}
    update |= {"band_source": BAND_SOURCE[j.basis], "outcome": OUTCOME.get(j.outcome, "not_ranked"), "why": j.says}
    return ranked.model_copy(update=update)


def base_of(campaign: Campaign, base_v: CellVerdict | None) -> tuple[Sample, list[MetricFlag]] | None:
    """The baseline cell's score (read over its boots) and its implausible figures; None without a score."""
    sample = cell_sample(campaign, base_v)[0] if base_v is not None else None
    return None if sample is None or base_v is None else (sample, cell_flags(base_v))


__all__ = [
    "BAND_SOURCE",
    "base_of",
    "boot_scores",
    "cell_flags",
    "cell_sample",
    "rank",
]
