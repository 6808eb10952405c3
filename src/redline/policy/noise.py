"""The one noise model: whether a difference between a baseline and a current figure is real, and the smallest one
that could have been seen (METHODOLOGY.md, "The noise model"). The A/B's verdict, the baseline diff and the campaign's
champion all compare a difference here, so on the same figures they cannot disagree.

    j = compare("output_throughput", Sample.of([2674, 3041, 2940]), Sample.of([3078, 2992, 2991]))
    j.basis, j.outcome, j.mde_pct     # "trials", "inside_noise", 14.6

The basis, in order: `trials` (both sides have >= 2 trials: Welch's two-sided t-test at alpha); `measured` (one side
has a spread: the same test with that spread on both sides; or a band measured elsewhere, passed in); `stated` (a band
the caller states: a campaign's noise_band_pct, a diff's tolerance); `default` (METHODOLOGY.md's 3%).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from redline.models.campaign_results import Stat
from redline.models.metrics import (
    Basis,
    Judged,
    MetricFlag,
    NoiseJudgement,
    better_by_pct,
    change_words,
    metric,
)
from redline.policy.welch import t_quantile, t_two_sided_p, welch_summary

DEFAULT_BAND_PCT = 3.0  # METHODOLOGY.md's default noise band
DEFAULT_ALPHA = 0.05
POWER = 0.80  # the power the smallest detectable effect is stated at
ITL_TPOT_RATIO = 100.0  # a median ITL under TPOT / this is an artefact, not a latency


@dataclass(frozen=True)
class Sample:
    """One side's figures of one metric: mean, sample std (None under 2 trials), n, and the values where kept."""

    mean: float | None
    std: float | None
    n: int
    values: tuple[float, ...] = ()

    @classmethod
    def of(cls, values: Sequence[float]) -> Sample:
        if not values:
            return cls(mean=None, std=None, n=0)
        std = statistics.stdev(values) if len(values) > 1 else None
        return cls(mean=statistics.fmean(values), std=std, n=len(values), values=tuple(values))

    @classmethod
    def of_stat(cls, stat: Stat | None) -> Sample:
        if stat is None:
            return cls(mean=None, std=None, n=0)
        return cls(mean=stat.mean, std=stat.std, n=stat.n, values=tuple(stat.values))

    @property
    def spread(self) -> bool:
        return self.n >= 2 and self.std is not None


@dataclass(frozen=True)
class Band:
    """A band given from outside the figures compared: measured elsewhere (a recorded spread) or stated."""

    pct: float
    basis: Literal["measured", "stated", "default"]
    source: str
    mde_pct: float | None = None  # a measured band's smallest detectable effect; a stated one's is the band
    cv: float | None = None  # a measured band's spread: one run's std / mean (the search's noise per boot)


def stated_band(pct: float | None, source: str, unmeasured: str = "") -> Band:
    """The band a caller states, or METHODOLOGY.md's default where it states none (or states the default);
    `unmeasured`: why nothing was measured, said with the default."""
    if pct is None or pct == DEFAULT_BAND_PCT:
        why = f" ({unmeasured})" if unmeasured else ""
        return Band(pct=DEFAULT_BAND_PCT, basis="default", source=f"METHODOLOGY.md's default{why}")
    return Band(pct=pct, basis="stated", source=source)


def pooled_band(groups: Mapping[str, Sequence[float]], source: str, alpha: float = DEFAULT_ALPHA) -> Band | None:
    """A band from repeated runs of several configs (a campaign's cells booted more than once): each run relative to
    its own config's mean, the variance pooled over the configs (df: runs - configs), as measured_band takes it;
    None where no config ran twice. `source` is said with the spread measured."""
    repeated = [values for values in groups.values() if len(values) >= 2 and statistics.fmean(values)]
    df = sum(len(values) - 1 for values in repeated)
    if df < 1:
        return None
    squares = sum((v / statistics.fmean(values) - 1) ** 2 for values in repeated for v in values)
    cv = math.sqrt(squares / df)
    return measured_band(cv, df + 1, f"{source}: a spread of {100 * cv:.2g}% (cv, {df} df)", alpha)


def measured_band(cv: float, trials: int, source: str, alpha: float = DEFAULT_ALPHA) -> Band:
    """A band from a coefficient of variation (std / mean) measured over `trials` runs elsewhere, for two single
    runs: t(alpha/2, trials - 1) x cv x sqrt(2), and its smallest detectable effect at POWER."""
    df = max(trials - 1, 1)
    scale = cv * math.sqrt(2.0) * 100
    ta, tp = t_quantile(alpha / 2, df), t_quantile(1 - POWER, df)
    return Band(pct=ta * scale, basis="measured", source=source, mde_pct=(ta + tp) * scale, cv=cv)


# ---- the judgement -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    basis: Basis
    band_pct: float
    p_value: float | None
    mde_pct: float
    real: bool
    how: str  # the test, for the sentence


def _by_trials(base: Sample, cur: Sample, alpha: float) -> _Call:
    assert base.mean is not None and cur.mean is not None and base.std is not None and cur.std is not None
    test = welch_summary((cur.mean, cur.std, cur.n), (base.mean, base.std, base.n))
    assert test is not None
    se = math.sqrt(base.std**2 / base.n + cur.std**2 / cur.n)
    band = t_quantile(alpha / 2, test.df) * se / abs(base.mean) * 100 if se else 0.0
    pooled = math.sqrt(((base.n - 1) * base.std**2 + (cur.n - 1) * cur.std**2) / (base.n + cur.n - 2))
    mde = (t_quantile(alpha / 2, test.df) + t_quantile(1 - POWER, test.df)) * pooled  # at the test's own df
    mde_pct = mde * math.sqrt(1 / base.n + 1 / cur.n) / abs(base.mean) * 100
    sign = "<" if test.p_value < alpha else ">="
    how = f"Welch's t-test p = {test.p_value:.3g} {sign} {alpha:g}"
    return _Call("trials", band, test.p_value, max(mde_pct, band), test.p_value < alpha, how)


def _by_one_spread(base: Sample, cur: Sample, alpha: float) -> _Call:
    """One side has trials: the t-test with that side's spread taken for both, df = its trials - 1."""
    assert base.mean is not None and cur.mean is not None
    side = base if base.spread else cur
    assert side.std is not None
    df = side.n - 1
    se = side.std * math.sqrt(1 / base.n + 1 / cur.n)
    band = t_quantile(alpha / 2, df) * se / abs(base.mean) * 100
    mde = (t_quantile(alpha / 2, df) + t_quantile(1 - POWER, df)) * se / abs(base.mean) * 100
    p = t_two_sided_p((cur.mean - base.mean) / se, df) if se else (1.0 if cur.mean == base.mean else 0.0)
    which = "the baseline's" if side is base else "the current side's"
    return _Call("measured", band, p, mde, p < alpha, f"{which} spread over {side.n} trials, p = {p:.3g}")


def _by_band(band: Band, base: float, current: float) -> _Call:
    """A band is a factor either way: the figures differ for real where one is more than (1 + band) times the other,
    so a fall is judged as a rise of the same factor (a 5x fall is -80%, beyond a 160% band measured between boots)."""
    mde = band.mde_pct if band.mde_pct is not None else band.pct
    how = f"no spread on either side: the {band.pct:.3g}% band, {band.source}"
    fold = max(current / base, base / current) if base > 0 and current > 0 else math.inf
    return _Call(band.basis, band.pct, None, max(mde, band.pct), fold > 1 + band.pct / 100, how)


def _call(base: Sample, current: Sample, alpha: float, band: Band | None) -> _Call:
    """The basis, in order: both sides' trials, one side's spread, the band given, the default band."""
    if base.spread and current.spread:
        return _by_trials(base, current, alpha)
    if base.spread or current.spread:
        return _by_one_spread(base, current, alpha)
    assert base.mean is not None and current.mean is not None
    return _by_band(band or stated_band(None, ""), base.mean, current.mean)


def compare(
    name: str,
    base: Sample,
    current: Sample,
    *,
    alpha: float = DEFAULT_ALPHA,
    band: Band | None = None,
    flags: Sequence[MetricFlag] = (),
    per: str = "GPU",
) -> NoiseJudgement:
    """current against base on metric `name`: better, worse, inside the noise, untestable or flagged, and why.
    `per`: what a per-GPU figure is per where the host showed no GPU (ContextDescriptor.device: host, device)."""
    info = metric(name)
    unit = info.unit.replace("/GPU", f"/{per}")
    found = {"metric": name, "direction": info.direction, "unit": unit, "alpha": alpha}
    found |= {"n": (base.n, current.n), "flags": list(flags)}
    if base.mean is None or current.mean is None or not base.mean:
        says = f"{name} is not measured on both sides: nothing to compare"
        none = dict.fromkeys(("delta_pct", "band_pct", "mde_pct"))
        return NoiseJudgement(**found, **none, change="not measured", basis="default", outcome="untestable", says=says)
    delta = better_by_pct(base.mean, current.mean, info.direction)
    call = _call(base, current, alpha, band)
    outcome: Judged = ("better" if delta > 0 else "worse") if call.real else "inside_noise"
    if flags:
        outcome = "flagged"
    return NoiseJudgement(
        **found,
        delta_pct=round(delta, 4),
        change=change_words(delta),
        basis=call.basis,
        band_pct=round(call.band_pct, 4),
        p_value=call.p_value,
        mde_pct=round(call.mde_pct, 4),
        outcome=outcome,
        says=_says(name, unit, base, current, delta, call, outcome, flags),
    )


def _says(
    name: str,
    unit: str,
    base: Sample,
    cur: Sample,
    delta: float,
    call: _Call,
    outcome: Judged,
    flags: Sequence[MetricFlag],
) -> str:
    figures = f"{base.mean:,.4g} -> {cur.mean:,.4g} {unit}"
    head = f"{name} {change_words(delta)} ({figures})"
    if outcome == "flagged":
        return f"{head}: not judged, implausible: " + "; ".join(f.why for f in flags)
    verdict = "inside the noise" if outcome == "inside_noise" else "beyond the noise"
    return (
        f"{head}, {verdict} ({call.how}); smallest detectable effect {call.mde_pct:.3g}% "
        f"(n = {base.n} + {cur.n}, {call.basis})"
    )


def detectable(judgements: Sequence[tuple[str, NoiseJudgement]]) -> str:
    """'smallest detectable effect: 14.6% (c=128, trials)', over (label, judgement) pairs; the largest first."""
    seen = [(label, j) for label, j in judgements if j.mde_pct is not None]
    if not seen:
        return "smallest detectable effect: none (nothing measured on both sides)"
    seen.sort(key=lambda lj: -(lj[1].mde_pct or 0.0))
    parts = [f"{j.mde_pct:.3g}% ({label}, {j.basis})" for label, j in seen[:4]]
    more = f" and {len(seen) - 4} more" if len(seen) > 4 else ""
    return "smallest detectable effect: " + ", ".join(parts) + more


# ---- implausible figures -------------------------------------------------------------------------------------------


def flags_of(where: str, figures: Mapping[str, Sample]) -> list[MetricFlag]:
    """The figures of one side at one concurrency too implausible to claim on: an ITL orders of magnitude below the
    TPOT (any trial's under TPOT / 100), a metric whose spread over trials exceeds its mean."""
    flags = []
    itl, tpot = figures.get("median_itl_ms"), figures.get("median_tpot_ms")
    if itl is not None and tpot is not None and itl.mean is not None and tpot.mean:
        low = min(itl.values or (itl.mean,))
        if low < tpot.mean / ITL_TPOT_RATIO:
            flags.append(
                MetricFlag(
                    metric="median_itl_ms",
                    rule="itl_below_tpot",
                    where=where,
                    why=f"median_itl_ms {low:.3g} ms ({where}) is under 1/{ITL_TPOT_RATIO:g} of median_tpot_ms "
                    f"{tpot.mean:.3g} ms: an artefact of how tokens were streamed, not a latency",
                )
            )
    for name, s in figures.items():
        if s.spread and s.mean is not None and s.std is not None and s.std > abs(s.mean):
            flags.append(
                MetricFlag(
                    metric=name,
                    rule="spread_over_mean",
                    where=where,
                    why=f"{name} std {s.std:.3g} exceeds its mean {s.mean:.3g} over {s.n} trials ({where})",
                )
            )
    return flags


def flags_on(name: str, flags: Sequence[MetricFlag]) -> list[MetricFlag]:
    return [f for f in flags if f.metric == name]


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BAND_PCT",
    "ITL_TPOT_RATIO",
    "POWER",
    "Band",
    "Sample",
    "detectable",
    "flags_of",
    "flags_on",
    "compare",
    "measured_band",
    "pooled_band",
    "stated_band",
]
