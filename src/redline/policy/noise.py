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
    TOKEN_FLOOR_MS,
    Band,
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


ASSUMED = "METHODOLOGY.md's default, assumed"


def stated_band(pct: float | None, source: str, unmeasured: str = "") -> Band:
    """The band a caller states, or METHODOLOGY.md's default where it states none (or states the default), said as
    assumed; `unmeasured`: why nothing was measured, said with the default."""
    if pct is None or pct == DEFAULT_BAND_PCT:
        why = f" ({unmeasured})" if unmeasured else ""
        return Band(pct=DEFAULT_BAND_PCT, basis="default", source=f"{ASSUMED}{why}")
    return Band(pct=pct, basis="stated", source=source)


Groups = Mapping[str, Sequence[Sequence[float]]]  # per config, its points; per point, one figure per boot


def pooled_spread(groups: Groups) -> tuple[float, int] | None:
    """The boot-to-boot coefficient of variation pooled over several configs booted more than once, and its degrees
    of freedom: each boot's figure relative to its point's mean, a config's variance the mean over its points (its
    points share its boots, so it counts boots - 1 degrees of freedom, not more), the configs' pooled by their
    degrees of freedom. None where no config ran twice."""
    found = []
    for points in groups.values():
        repeated = [values for values in points if len(values) >= 2 and statistics.fmean(values)]
        if not repeated:
            continue
        df = min(len(values) for values in repeated) - 1
        cv2 = statistics.fmean(
            sum((v / statistics.fmean(values) - 1) ** 2 for v in values) / (len(values) - 1) for values in repeated
        )
        found.append((cv2, df))
    df = sum(d for _, d in found)
    if df < 1:
        return None
    return math.sqrt(sum(cv2 * d for cv2, d in found) / df), df


def pooled_band(groups: Mapping[str, Sequence[float]], source: str, alpha: float = DEFAULT_ALPHA) -> Band | None:
    """A band from repeated boots of several configs, one figure per boot each (their scores): points_band."""
    return points_band({name: [values] for name, values in groups.items()}, source, alpha)


def points_band(
    groups: Groups, source: str, alpha: float = DEFAULT_ALPHA, basis: Literal["measured", "earlier"] = "measured"
) -> Band | None:
    """A band from repeated boots of several configs (a campaign's cells booted more than once), each at its points:
    pooled_spread, as measured_band takes it; None where no config ran twice. `source` is said with the spread."""
    spread = pooled_spread(groups)
    if spread is None:
        return None
    cv, df = spread
    return measured_band(cv, df + 1, f"{source}: a spread of {100 * cv:.2g}% (cv, {df} df)", alpha, basis)


def measured_band(
    cv: float,
    trials: int,
    source: str,
    alpha: float = DEFAULT_ALPHA,
    basis: Literal["measured", "earlier"] = "measured",
) -> Band:
    """A band from a coefficient of variation (std / mean) measured over `trials` runs (trials - 1 degrees of
    freedom), for two single runs: t(alpha/2, df) x cv x sqrt(2), and its smallest detectable effect at POWER."""
    df = max(trials - 1, 1)
    pct, mde = band_at(cv, df, 1, 1, alpha)
    return Band(pct=pct, basis=basis, source=source, mde_pct=mde, cv=cv, df=df)


def band_at(cv: float, df: int, n_base: int, n_cur: int, alpha: float = DEFAULT_ALPHA) -> tuple[float, float]:
    """A spread's band and smallest detectable effect for the means of n_base and n_cur boots, in %:
    t(alpha/2, df) x cv x sqrt(1/n_base + 1/n_cur), and (t(alpha/2) + t(POWER)) x the same."""
    scale = cv * math.sqrt(1 / max(n_base, 1) + 1 / max(n_cur, 1)) * 100
    ta, tp = t_quantile(alpha / 2, df), t_quantile(1 - POWER, df)
    return ta * scale, (ta + tp) * scale


def between_boots(band: Band | None) -> bool:
    """Whether the band was measured between boots (these, or earlier ones of the same setup): it then judges the
    means of each side's boots before any spread of one side's benches."""
    return band is not None and band.basis in ("measured", "earlier") and band.cv is not None and bool(band.df)


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


def _by_band(band: Band, base: Sample, current: Sample, alpha: float) -> _Call:
    """A band is a factor either way: the figures differ for real where one is more than (1 + band) times the other,
    so a fall is judged as a rise of the same factor (a 5x fall is -80%, beyond a 160% band measured between boots).
    A band measured between boots is scaled to the boots each side's mean rests on."""
    assert base.mean is not None and current.mean is not None
    pct, mde = band.pct, band.mde_pct if band.mde_pct is not None else band.pct
    if between_boots(band):
        assert band.cv is not None and band.df is not None
        pct, mde = band_at(band.cv, band.df, base.n, current.n, alpha)
    boots = (
        f"the means of {base.n} and {current.n} boots against " if between_boots(band) else "no spread on either side: "
    )
    how = f"{boots}the {pct:.3g}% band, {band.source}"
    fold = max(current.mean / base.mean, base.mean / current.mean) if base.mean > 0 and current.mean > 0 else math.inf
    return _Call(band.basis, pct, None, max(mde, pct), fold > 1 + pct / 100, how)


def _call(base: Sample, current: Sample, alpha: float, band: Band | None) -> _Call:
    """The basis, in order: a band measured between boots (these, or earlier ones of the same setup: boot-to-boot
    is the noise between two configs, each its own boot), both sides' trials, one side's spread, the band given,
    the default band (assumed)."""
    if band is not None and between_boots(band):
        return _by_band(band, base, current, alpha)
    if base.spread and current.spread:
        return _by_trials(base, current, alpha)
    if base.spread or current.spread:
        return _by_one_spread(base, current, alpha)
    return _by_band(band or stated_band(None, ""), base, current, alpha)


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


TOKEN_TIMES = ("median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms")


def flags_of(where: str, figures: Mapping[str, Sample]) -> list[MetricFlag]:
    """The figures of one side at one concurrency too implausible to claim on: an ITL orders of magnitude below the
    TPOT (any trial's under TPOT / 100), a TPOT or ITL under the token floor (any trial's), a metric whose spread over
    trials exceeds its mean. One flag per metric and rule; an ITL under both the floor and TPOT / 100 is named once."""
    flags = _itl_below_tpot(where, figures)
    flags += [f for f in _under_floor(where, figures) if not flags_on(f.metric, flags)]
    for name, s in figures.items():
        if s.spread and s.mean is not None and s.std is not None and s.std > abs(s.mean):
            why = f"{name} std {s.std:.3g} exceeds its mean {s.mean:.3g} over {s.n} trials ({where})"
            flags.append(MetricFlag(metric=name, rule="spread_over_mean", where=where, why=why))
    return flags


def _itl_below_tpot(where: str, figures: Mapping[str, Sample]) -> list[MetricFlag]:
    itl, tpot = figures.get("median_itl_ms"), figures.get("median_tpot_ms")
    if itl is None or tpot is None or itl.mean is None or not tpot.mean:
        return []
    low = min(itl.values or (itl.mean,))
    if low >= tpot.mean / ITL_TPOT_RATIO:
        return []
    why = (
        f"median_itl_ms {low:.3g} ms ({where}) is under 1/{ITL_TPOT_RATIO:g} of median_tpot_ms {tpot.mean:.3g} ms: "
        "an artefact of how tokens were streamed, not a latency"
    )
    return [MetricFlag(metric="median_itl_ms", rule="itl_below_tpot", where=where, why=why)]


def _under_floor(where: str, figures: Mapping[str, Sample]) -> list[MetricFlag]:
    flags = []
    for name in TOKEN_TIMES:
        s = figures.get(name)
        low = min(s.values or (s.mean,)) if s is not None and s.mean is not None else None
        if low is not None and low < TOKEN_FLOOR_MS:
            why = (
                f"{name} {low:.3g} ms ({where}) is under {TOKEN_FLOOR_MS:g} ms, faster than any engine decodes a token:"
                " the tokens reached the client together (or one token per request), not a latency"
            )
            flags.append(MetricFlag(metric=name, rule="under_floor", where=where, why=why))
    return flags


def flags_on(name: str, flags: Sequence[MetricFlag]) -> list[MetricFlag]:
    return [f for f in flags if f.metric == name]


__all__ = [
    "ASSUMED",
    "DEFAULT_ALPHA",
    "DEFAULT_BAND_PCT",
    "ITL_TPOT_RATIO",
    "POWER",
    "Band",
    "Groups",
    "Sample",
    "band_at",
    "between_boots",
    "detectable",
    "flags_of",
    "flags_on",
    "compare",
    "measured_band",
    "points_band",
    "pooled_band",
    "pooled_spread",
    "stated_band",
]
