"""Welch's unequal-variance t-test, two-sided, with the standard library only (no scipy).

    result = welch([10.1, 10.3, 9.9], [11.0, 11.2, 10.8])
    result.p_value < 0.05     # the difference is real at the 5% level

The p-value is the Student t distribution's two-sided tail, 2 * P(T > |t|) =
I_{df/(df+t^2)}(df/2, 1/2), the regularized incomplete beta function computed by
its continued fraction (Numerical Recipes, betacf, modified Lentz). Checked against
published t-table values in tests/policy/test_welch.py.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 500


@dataclass(frozen=True)
class Welch:
    """t (a minus b), Welch-Satterthwaite degrees of freedom, the two-sided p-value."""

    t: float
    df: float
    p_value: float


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_ITER + 1):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + t * t)))


def welch(a: Sequence[float], b: Sequence[float]) -> Welch | None:
    """Welch's t-test of mean(a) against mean(b); None with fewer than 2 values on a side (no variance to test)."""
    if len(a) < 2 or len(b) < 2:
        return None
    return welch_summary(
        (statistics.fmean(a), statistics.stdev(a), len(a)), (statistics.fmean(b), statistics.stdev(b), len(b))
    )


def welch_summary(a: tuple[float, float, int], b: tuple[float, float, int]) -> Welch | None:
    """The same test from each side's (mean, sample std, n): what a recorded result keeps of its trials."""
    (ma, sda, na), (mb, sdb, nb) = a, b
    if na < 2 or nb < 2:
        return None
    sa, sb = sda * sda / na, sdb * sdb / nb
    se2 = sa + sb
    if se2 == 0.0:  # no spread at all: equal means are no difference, unequal ones are certain
        return Welch(
            t=0.0 if ma == mb else math.copysign(math.inf, ma - mb),
            df=float(na + nb - 2),
            p_value=1.0 if ma == mb else 0.0,
        )
    t = (ma - mb) / math.sqrt(se2)
    df = se2 * se2 / ((sa * sa / (na - 1)) + (sb * sb / (nb - 1)))
    return Welch(t=t, df=df, p_value=t_two_sided_p(t, df))


def t_quantile(upper_tail: float, df: float) -> float:
    """The t with P(T > t) = upper_tail (0 < upper_tail < 0.5) for df degrees of freedom, by bisection on the tail."""
    if not 0.0 < upper_tail < 0.5:
        raise ValueError(f"upper_tail must be in (0, 0.5), not {upper_tail}")
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) / 2 > upper_tail:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_two_sided_p(mid, df) / 2 > upper_tail else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


__all__ = ["Welch", "betainc", "t_quantile", "t_two_sided_p", "welch", "welch_summary"]
