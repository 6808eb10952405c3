"""What every engine's memory model fits with: a line through points, an offset, and the spread left over.

A fit never claims more than its boots show: its band is the largest distance of a boot from it (plus the log's
own rounding, 0.01 GiB), and a term with no boot behind it says so in its basis and takes a stated prior.
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.models.memory import Fit

ROUNDING_GIB = 0.01  # the logs print GiB to two decimals


def offset(name: str, residuals: Sequence[float], prior: float, why: str) -> Fit:
    """A constant term: the mean of the residuals, or the prior where there are none."""
    if not residuals:
        return Fit(coefficients={name: prior}, band_gib=abs(prior) + ROUNDING_GIB, boots=0, basis=f"prior: {why}")
    mean = sum(residuals) / len(residuals)
    band = max(abs(r - mean) for r in residuals) + ROUNDING_GIB
    return Fit(coefficients={name: mean}, band_gib=band, boots=len(residuals), basis=f"mean of {len(residuals)} boots")


def line(points: Sequence[tuple[float, float]], prior: tuple[float, float], why: str) -> Fit:
    """y = slope x + intercept by least squares; with one x only, the prior's slope through the points' mean; with
    no point, the prior."""
    xs = {round(x, 9) for x, _ in points}
    if not points:
        slope, intercept = prior
        return Fit(
            coefficients={"slope": slope, "intercept": intercept},
            band_gib=abs(intercept) + ROUNDING_GIB,
            boots=0,
            basis=f"prior: {why}",
        )
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    if len(xs) == 1:
        slope, basis = prior[0], f"{n} boots at one size: the prior's slope ({why}) through their mean"
    else:
        sxx = sum((x - mx) ** 2 for x, _ in points)
        slope, basis = sum((x - mx) * (y - my) for x, y in points) / sxx, f"least squares over {n} boots"
    intercept = my - slope * mx
    band = max(abs(y - slope * x - intercept) for x, y in points) + ROUNDING_GIB
    span = {"x_min": min(x for x, _ in points), "x_max": max(x for x, _ in points)}
    return Fit(coefficients={"slope": slope, "intercept": intercept, **span}, band_gib=band, boots=n, basis=basis)


def at(fit: Fit, x: float) -> float:
    return fit.coefficients["slope"] * x + fit.coefficients["intercept"]


def beyond(fit: Fit, x: float) -> float:
    """How far x lies outside the x the fit saw (0 inside), in x's units."""
    low, high = fit.coefficients.get("x_min"), fit.coefficients.get("x_max")
    if low is None or high is None:
        return abs(x)
    return max(low - x, x - high, 0.0)


__all__ = ["ROUNDING_GIB", "at", "beyond", "line", "offset"]
