"""What every engine's memory model fits with: a line through points, an offset, and the spread left over.

A fit never claims more than its boots show: its band is the largest distance of a boot from it (plus the log's
own rounding, 0.01 GiB), and a term with no boot behind it says so in its basis and takes a stated prior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redline.models.boot import CompileCache
from redline.models.memory import Calibration, Fit, GpuSpec, MemoryPrediction, Observation, Terms
from redline.models.serve import ServeConfig

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


def grouped_line(groups: dict[str, list[tuple[float, float]]], prior: tuple[float, float], why: str) -> Fit:
    """y = slope x + intercept where each group (an architecture) has an intercept of its own and all share the
    slope, fitted within the groups; the intercept is the groups' mean and `spread` how far the farthest group's
    lies from it, the part of the band a group no point came from is owed. One group: line()."""
    sized = {g: pts for g, pts in groups.items() if len({round(x, 9) for x, _ in pts}) > 1}
    if len(groups) < 2 or not sized:
        return line([p for pts in groups.values() for p in pts], prior, why)
    means = {g: (sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)) for g, pts in groups.items()}
    sxx = sum((x - means[g][0]) ** 2 for g, pts in sized.items() for x, _ in pts)
    slope = sum((x - means[g][0]) * (y - means[g][1]) for g, pts in sized.items() for x, y in pts) / sxx
    own = {g: my - slope * mx for g, (mx, my) in means.items()}
    intercept = sum(own.values()) / len(own)
    points = [(x, y, own[g]) for g, pts in groups.items() for x, y in pts]
    band = max(abs(y - slope * x - b) for x, y, b in points) + ROUNDING_GIB
    coefficients = {
        "slope": slope,
        "intercept": intercept,
        "spread": max(abs(b - intercept) for b in own.values()),
        "x_min": min(x for x, _, _ in points),
        "x_max": max(x for x, _, _ in points),
    }
    basis = f"least squares over {len(points)} boots of {len(groups)} architectures, a slope shared, an intercept each"
    return Fit(coefficients=coefficients, band_gib=band, boots=len(points), basis=basis)


def at(fit: Fit, x: float) -> float:
    return fit.coefficients["slope"] * x + fit.coefficients["intercept"]


def sized(fit: Fit) -> bool:
    """Whether a line's slope was measured: boots at two sizes or more."""
    low, high = fit.coefficients.get("x_min"), fit.coefficients.get("x_max")
    return low is not None and high is not None and high > low


def beyond(fit: Fit, x: float) -> float:
    """How far x lies outside the x the fit saw (0 inside), in x's units."""
    low, high = fit.coefficients.get("x_min"), fit.coefficients.get("x_max")
    if low is None or high is None:
        return abs(x)
    return max(low - x, x - high, 0.0)


@dataclass(frozen=True)
class Asked:
    """What a prediction is asked for: the config, the GPU, the calibration, how to name the model, its anchor, and
    the torch.compile cache the boot is predicted for (None: the engine's KV cache does not depend on it)."""

    serve: ServeConfig
    gpu: GpuSpec | None
    cal: Calibration
    model: str
    architecture: str | None
    version: str | None
    anchor: Observation | None
    compile_cache: CompileCache | None = None


@dataclass(frozen=True)
class Sized:
    """What an engine's model sized: the terms, the KV cache's band (GiB), how, and the tokens it holds."""

    terms: Terms
    band_gib: float
    basis: str
    per_token: int
    tokens: tuple[int, int, int]  # the KV cache's tokens, at the band's low end, at its high end
    reserved: int = 0  # tokens of it no request may use (a block the engine keeps back)


def prediction(
    engine: str, ask: Asked, sized: Sized, *, concurrency: float, boots: bool, warnings: list[str]
) -> MemoryPrediction:
    """The prediction as every engine says it: labelled predicted, with its band and its basis."""
    tokens, low, high = sized.tokens
    calibrated = f"calibrated on {ask.cal.boots} boots of {', '.join(ask.cal.architectures) or 'none'}"
    return MemoryPrediction(
        engine=engine,
        engine_version=ask.version,
        gpu=ask.gpu,
        model=ask.model,
        architecture=ask.architecture,
        serve=ask.serve,
        compile_cache=ask.compile_cache,
        terms=sized.terms,
        kv_bytes_per_token=sized.per_token,
        kv_cache_tokens=tokens,
        kv_cache_tokens_low=low,
        kv_cache_tokens_high=high,
        reserved_tokens=sized.reserved,
        band_gib=round(sized.band_gib, 3),
        max_concurrency=round(concurrency, 2),
        boots=boots,
        basis=f"{sized.basis}; {calibrated}",
        anchored_on=ask.anchor.source if ask.anchor else None,
        warnings=warnings,
    )


__all__ = ["ROUNDING_GIB", "Asked", "Sized", "at", "beyond", "line", "offset", "prediction", "sized"]
