"""A campaign cell's figures over every boot it had, and the noise its cells are judged by: one reading of a campaign's
boots for every tool that states a verdict of it (champion_select, perf_baseline_diff, campaign_aggregate,
campaign_report, the search's band); pure.

    noise = campaign_noise(campaign, verdicts, replicates, earlier)     # metric -> Band, and where it came from
    cell = over_boots(verdicts["a"], replicates.get("a", ()), noise)    # its figures, each the mean of its boots

The noise between two configs is boot-to-boot: each config is its own boot. So where the campaign booted cells more
than once (its replicates), each metric's band is their spread, pooled (basis `measured`); else the spread earlier
boots of the same model, engine, GPU and host measured (`earlier`, the workspace's noise.yml); else the campaign's
noise_band_pct, else METHODOLOGY.md's 3%, said as assumed. With a band measured between boots, a cell's figure at
each point is the mean of its green boots there (n boots), its benches' spread on one boot set aside; with none, its
one boot's figures as they are.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from redline.models.campaign import FOCUS_METRIC, Campaign
from redline.models.campaign_results import CellVerdict, ConcurrencyResult, Stat
from redline.models.metrics import Band
from redline.models.workloads import Load, load_of
from redline.policy.noise import between_boots, points_band, stated_band

Replicates = Mapping[str, Sequence[CellVerdict]]  # each cell's boots after its first
Noise = Mapping[str, Band]  # each metric's band


def green_boots(first: CellVerdict, replicates: Sequence[CellVerdict]) -> list[CellVerdict]:
    """A cell's boots that count: its green ones (a red boot, a flagged bench's among them, is left out)."""
    return [v for v in (first, *replicates) if v.verdict == "green"]


def _at(verdict: CellVerdict, workload: str | None, point: Load) -> ConcurrencyResult | None:
    return next((r for r in verdict.results if (r.workload, load_of(r)) == (workload, point) and r.ok), None)


def boot_values(boots: Sequence[CellVerdict], workload: str | None, point: Load, metric: str) -> list[float]:
    """One metric at one point (a concurrency, or a rate), one figure per boot (each boot's mean over its benches)
    where that boot has it."""
    found = [_at(v, workload, point) for v in boots]
    return [r.metrics[metric].mean for r in found if r is not None and metric in r.metrics]


def _metrics(verdicts: Iterable[CellVerdict]) -> list[str]:
    return sorted({m for v in verdicts for r in v.results for m in r.metrics})


def _groups(booted: Mapping[str, Sequence[CellVerdict]], metric: str) -> dict[str, list[list[float]]]:
    """Per cell booted more than once, per point, the metric's figure on each boot."""
    return {
        cell: [boot_values(boots, r.workload, load_of(r), metric) for r in boots[0].results if r.ok]
        for cell, boots in booted.items()
        if len(boots) > 1
    }


def unmeasured(campaign: Campaign, earlier_too: bool = True) -> str:
    """Why no band was measured between this campaign's boots, in words."""
    there = " and no earlier boot of this model, engine, hardware and host measured one" if earlier_too else ""
    if not campaign.replicates:
        return f"replicates: 0, so no cell was booted twice{there}"
    return f"no replicate has a score yet{there}"


def fallback(campaign: Campaign) -> Band:
    """The band where nothing was measured: the campaign's noise_band_pct, else the 3% default, assumed."""
    return stated_band(
        campaign.noise_band_pct,
        f"the campaign's noise_band_pct {campaign.noise_band_pct}% (stated, nothing measured)",
        unmeasured(campaign),
    )


def campaign_noise(
    campaign: Campaign, verdicts: Mapping[str, CellVerdict], replicates: Replicates, earlier: Noise | None = None
) -> dict[str, Band]:
    """Every metric's band: the spread between the boots of the cells booted more than once, pooled; else the one
    earlier boots of this setup measured (`earlier`); else the stated or default band."""
    booted = {c: green_boots(verdicts[c], r) for c, r in replicates.items() if c in verdicts}
    booted = {c: b for c, b in booted.items() if b and b[0] is verdicts[c]}  # the first boot green: it is ranked
    said = ", ".join(f"{c} ({len(b)} boots)" for c, b in booted.items() if len(b) > 1)
    source = f"the boot-to-boot spread of {said}"
    out: dict[str, Band] = {}
    for metric in _metrics(verdicts.values()):
        band = points_band(_groups(booted, metric), source)
        out[metric] = band or (earlier or {}).get(metric) or fallback(campaign)
    return out


def campaign_band(
    campaign: Campaign, verdicts: Mapping[str, CellVerdict], replicates: Replicates, earlier: Noise | None = None
) -> Band:
    """The band the campaign's focus metric is judged by (the champion's, the search's): campaign_noise's."""
    focus = FOCUS_METRIC[campaign.focus]
    found = campaign_noise(campaign, verdicts, replicates, earlier).get(focus)
    return found or (earlier or {}).get(focus) or fallback(campaign)


def _stat(values: Sequence[float]) -> Stat:
    std = statistics.stdev(values) if len(values) > 1 else None
    return Stat(mean=statistics.fmean(values), std=std, n=len(values), values=list(values))


def over_boots(first: CellVerdict, replicates: Sequence[CellVerdict], noise: Noise) -> CellVerdict:
    """The cell as every verdict reads it: with a band measured between boots, each figure the mean of its green
    boots at that point (n: boots; its benches' spread on one boot set aside); else its first boot as it is."""
    if first.verdict != "green" or not any(between_boots(b) for b in noise.values()):
        return first
    boots = green_boots(first, replicates)
    results = []
    for r in first.results:
        if not r.ok:
            results.append(r)
            continue
        metrics = {
            m: _stat(values) if between_boots(noise.get(m)) else s
            for m, s in r.metrics.items()
            if (values := boot_values(boots, r.workload, load_of(r), m))
        }
        results.append(r.model_copy(update={"metrics": metrics}))
    return first.model_copy(update={"results": results})


# ---- what a campaign can see, before and after it runs -------------------------------------------------------------

BLIND_PCT = 50.0  # a smallest detectable effect over this sees nothing a config change is likely to do
FINE_PCT = 10.0  # the effect a campaign that is not blind should be able to see
Z_SUM = 2.8  # z(alpha/2 = 0.025) + z(power 0.80), for how many boots a finer band needs


def boots_for(cv: float, effect_pct: float = FINE_PCT) -> int:
    """How many boots of each of two compared cells see an effect of effect_pct at alpha 0.05 and 80% power, where
    boots differ by cv: 2 x (z x cv / effect)^2, at least 2."""
    return max(2, math.ceil(2 * (Z_SUM * cv / (effect_pct / 100)) ** 2))


def cost_of(boots: int, boot_s: float | None) -> str:
    each = f" (about {boots * boot_s:,.0f} s at {boot_s:,.0f} s a boot and its benches)" if boot_s else ""
    return f"{boots} boot{'s' if boots != 1 else ''}{each}"


def blind(band: Band, boot_s: float | None) -> str | None:
    """Where the band leaves the campaign blind (its smallest detectable effect over BLIND_PCT), that said, and the
    fix with its cost; None where it can see."""
    mde = band.mde_pct if band.mde_pct is not None else band.pct
    if mde <= BLIND_PCT or band.cv is None:
        return None
    n = boots_for(band.cv)
    return (
        f"blind: boots of this setup differ by {100 * band.cv:.2g}% (cv), so one boot against another cannot tell "
        f"apart less than {mde:.3g}%; to see {FINE_PCT:g}%, boot each compared cell about {n} times (replicates: "
        f"{n - 1}, {cost_of(2 * (n - 1), boot_s)} for the top two), or bench longer (more prompts) where the "
        "spread is within a bench"
    )


def outlook(campaign: Campaign, band: Band, boot_s: float | None) -> str:
    """What the campaign's noise band is or will be, before or after it runs: measured, from earlier boots, or assumed
    (a warning, with what a replicate costs); and whether it leaves the campaign blind."""
    said = f"noise band {band.pct:.3g}% ({band.basis}: {band.source})"
    if band.basis in ("measured", "earlier"):
        return f"{said}; {found}" if (found := blind(band, boot_s)) else said
    if campaign.replicates:
        boots = 2 * campaign.replicates
        return (
            f"{said}, until the top two cells' replicate boots measure it ({cost_of(boots, boot_s)}: replicates: "
            f"{campaign.replicates})"
        )
    if band.basis == "stated":
        return f"{said}: stated, never measured (replicates: 0); replicates: 1 measures it for {cost_of(2, boot_s)}"
    return (
        f"warning: {said}: replicates: 0 and no spread of this setup is kept (noise.yml), so the "
        f"{band.pct:.3g}% band is assumed, and boots differ by more on real hosts (2-18% on an H200, 16-39% on a "
        f"2-core CPU host); replicates: 1 measures it for {cost_of(2, boot_s)}"
    )


__all__ = [
    "BLIND_PCT",
    "FINE_PCT",
    "Noise",
    "Replicates",
    "blind",
    "boot_values",
    "boots_for",
    "campaign_band",
    "campaign_noise",
    "fallback",
    "green_boots",
    "outlook",
    "over_boots",
    "unmeasured",
]
