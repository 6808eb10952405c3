"""The search's model of a campaign's space: each cell's score, and how sure of it, from the scores of the cells booted
so far. Pure.

A cell's score is a sum of parts, each a priori a normal about 0 (a Gaussian process over the cells):
- an intercept (about the measured scores' mean);
- one effect per lever value, the additive part: a categorical lever's values unrelated a priori; a numeric lever's
  alike as they are near in log2, each value as uncertain as any other (a middle value is not assumed to lie on a
  trend through the ends: a trend's prior, wide at the ends and narrow in the middle, kept the search from the
  middle values);
- one effect per pair of levers' values, the interactions (CUDA graphs x async scheduling, batched tokens x eager),
  and one per cell, what neither explains: each a priori INTERACTION of the additive part's size, so additivity
  carries what few cells measured to the many not booted, and a cell's own score overrides it where it fails.
The parts' size is not assumed, nor how near two values of a numeric lever must be to be alike: each size on a grid
(from half the noise floor to about twice the scores' mean) and each nearness (LENGTHS) is weighed by how well it
explains the scores measured (the marginal likelihood, under a flat prior over the grid), and a prediction is the
mixture over them. Early on, when few cells are measured, large sizes stay plausible and the
uncertainty stays wide (which draws boots to what is unknown); a space flat within the noise shrinks it. A score's
noise is one boot's spread where replicates measured it (std / mean), else half the noise band; at least NOISE_FLOOR
of the mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from redline.policy.search_space import Candidate, lever_key

NOISE_FLOOR = 0.01  # a score is never known better than 1% of its mean
LENGTHS = (1.0, 2.0, 4.0)  # how far apart, in doublings, a numeric lever's values are e^-1/2 alike: each weighed
INTERACTION = 0.25  # the interactions' and each cell's own part, a priori, as a share of the additive part's variance
SIZES = tuple(NOISE_FLOOR / 2 * 2 ** (k / 2) for k in range(18))  # the parts' size, as a share of the scores' mean


def _numeric(cells: Sequence[Candidate], lever: str) -> bool:
    values = [c.levers[lever] for c in cells if lever in c.levers]
    return all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values)


def _lever_kernel(cells: Sequence[Candidate], lever: str, length: float) -> np.ndarray:
    """How alike two cells are in one lever, 1 where its value is the same: a categorical lever (or a cell that
    leaves it unset) only then; a numeric lever's values by their distance in log2."""
    keys = [lever_key(lever, c.levers[lever]) if lever in c.levers else "" for c in cells]
    codes = np.unique(np.array(keys), return_inverse=True)[1]
    same: np.ndarray = (codes[:, None] == codes[None, :]).astype(float)
    if not _numeric(cells, lever):
        return same
    z = np.array([math.log2(c.levers[lever]) if lever in c.levers else math.nan for c in cells])  # type: ignore[arg-type]
    near: np.ndarray = np.exp(-((z[:, None] - z[None, :]) ** 2) / (2 * length**2))
    return np.where(np.isnan(near), same, near).astype(float)


def _kernel(cells: Sequence[Candidate], length: float) -> np.ndarray:
    """The prior's covariance between every two cells, for parts of size 1: the intercept, the additive part (the
    levers' kernels averaged), and INTERACTION x (the pairs' products averaged, and the cell's own part)."""
    levers = sorted({lv for c in cells for lv in c.levers})
    each = [_lever_kernel(cells, lv, length) for lv in levers]
    n = len(cells)
    additive = sum(each, np.zeros((n, n))) / max(len(each), 1)
    pairs = [a * b for i, a in enumerate(each) for b in each[i + 1 :]]
    paired = sum(pairs, np.zeros((n, n))) / len(pairs) if pairs else np.zeros((n, n))
    alone = np.prod(np.stack(each), axis=0) if each else np.ones((n, n))
    own = (alone == 1.0).astype(float)  # the same levers: the same config
    prior: np.ndarray = 1.0 + additive + INTERACTION * (paired + own)
    return prior


@dataclass(frozen=True)
class Model:
    """The posterior at every cell of the space: its estimated score and one standard deviation of it."""

    names: Mapping[str, int]  # a cell's name -> its row
    mean: np.ndarray
    sd: np.ndarray

    def at(self, cell: Candidate) -> tuple[float, float]:
        i = self.names[cell.name]
        return float(self.mean[i]), float(self.sd[i])


def fit(cells: Sequence[Candidate], scores: Mapping[str, float], band: float, noise: float | None = None) -> Model:
    """The posterior from the measured scores (signed: higher is better), mixed over the grid; `band`: the
    noise band as a fraction; `noise`: one boot's spread (std / mean) where replicates measured it. With no score,
    the prior: every cell alike."""
    names = {c.name: i for i, c in enumerate(cells)}
    priors = [_kernel(cells, length) for length in LENGTHS]
    seen = [i for n, i in names.items() if n in scores]
    if not seen:
        return Model(names, np.zeros(len(names)), np.sqrt(np.diag(priors[0])) * SIZES[-1])
    y = np.array([scores[cells[i].name] for i in seen])
    center = float(y.mean())
    scale = max(abs(center), 1e-9)
    sigma = max(noise if noise is not None else band / 2, NOISE_FLOOR)
    fits = [_given(prior, seen, (y - center) / scale, size, sigma) for prior in priors for size in SIZES]
    likely = np.array([f[0] for f in fits])
    weight = np.exp(likely - likely.max())
    weight /= weight.sum()
    mean = sum((w * f[1] for w, f in zip(weight, fits, strict=True)), np.zeros(len(names)))
    second = sum((w * (f[2] + f[1] ** 2) for w, f in zip(weight, fits, strict=True)), np.zeros(len(names)))
    return Model(names, center + scale * mean, scale * np.sqrt(np.maximum(second - mean**2, 0.0)))


def _given(
    prior: np.ndarray, seen: list[int], y: np.ndarray, size: float, sigma: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """At one size of the parts: the log marginal likelihood of the scores (centred and scaled), and every cell's
    posterior mean and variance."""
    k = size**2 * prior
    chol = np.linalg.cholesky(k[np.ix_(seen, seen)] + sigma**2 * np.eye(len(seen)))
    alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
    cross = k[:, seen]
    v = np.linalg.solve(chol, cross.T)
    likely = float(-0.5 * y @ alpha - np.log(np.diag(chol)).sum())
    return likely, cross @ alpha, np.maximum(np.diag(k) - (v * v).sum(axis=0), 0.0)


__all__ = ["INTERACTION", "LENGTHS", "NOISE_FLOOR", "SIZES", "Model", "fit"]
