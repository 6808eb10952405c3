"""Search: which cell of a campaign's space to boot next, from what the cells booted so far measured, and when to
stop. Pure: the runner asks it after every cell, with the verdicts on disk, so a search resumes after a kill like a
grid does (the same verdicts give the same proposal).

The model is additive over the levers and Bayesian: a cell's score is an intercept plus one effect per lever value,
fitted by least squares with each effect a priori near 0 (as near as the measured scores spread), so a lever value
no booted cell had keeps a wide uncertainty and draws a boot. A score's noise is one boot's spread, as the top
cells' replicate boots measured it (else half the noise band). A cell that leaves a lever unset (a cell of the
engine's defaults) takes the value it runs with (as_run), so it is predicted and learned from like any other. The
next cell is the one with the highest upper bound (the estimate plus KAPPA standard deviations), among the cells not
yet booted and not ruled out (a cell the memory model predicts infeasible is never proposed; a lever value every
booted cell of which failed counts against its cells). It starts with the baseline, then the cells the model knows
least about (the most lever values unlike those booted), `initial` in all.

bench/search_replay.py sets it against random search and TPE at equal boot budgets over the recorded landscapes.

It stops when the budget (boots, GPU-seconds) is spent, when `patience` cells in a row did not beat the best by more
than the noise band, when no cell left is predicted, even at its upper bound, to beat the best by more than the band
(the gap rule), or when every cell has booted. Each step says why it proposed its cell, and the stop says why it
stopped.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from redline.models.boot import BootSignals
from redline.models.search import SearchSpec
from redline.models.serve import ServeConfig

KAPPA = 2.0  # the upper bound: the estimate plus this many standard deviations
NOISE_FLOOR = 0.01  # a score is never known better than 1% of its mean


@dataclass(frozen=True)
class Candidate:
    """A cell of the space: its name and the value each lever takes in it."""

    name: str
    levers: Mapping[str, object]


@dataclass(frozen=True)
class Measured:
    """A booted cell's score (None: it failed, or was red), signed so that higher is better."""

    score: float | None
    gpu_s: float = 0.0


@dataclass(frozen=True)
class Proposal:
    cell: str
    why: str
    estimate: float | None = None
    upper: float | None = None
    best: float | None = None  # the best score measured when it was proposed (by the model)


@dataclass(frozen=True)
class SearchStop:
    """The search proposes no more cells, and why."""

    why: str


def as_run(cell: Candidate, serve: ServeConfig, signals: BootSignals | None, space: Sequence[Candidate]) -> Candidate:
    """A cell with the levers it leaves unset (a campaign's cell of the engine's defaults) as it runs, where other
    cells of the space set them: its serve config's value (kv_cache_dtype unset: auto, the engines' own default);
    else, once booted, what its boot log says it ran with (max_num_batched_tokens). The model then learns from that
    cell, and predicts it, as it does a grid cell."""
    config = serve.model_dump()
    filled: dict[str, object] = {}
    for lever in sorted({lv for c in space for lv in c.levers} - set(cell.levers)):
        value = config.get(lever)
        if lever == "kv_cache_dtype" and value is None:
            value = "auto"
        if lever == "max_num_batched_tokens" and value is None and signals is not None:
            value = signals.max_num_batched_tokens
        if value is not None:
            filled[lever] = value
    return Candidate(cell.name, {**cell.levers, **filled}) if filled else cell


def beats(score: float, best: float | None, band: float) -> bool:
    """Whether score is better than best by more than the noise band (scores are signed: higher is better)."""
    return best is None or score - best > band * abs(best)


def _key(lever: str, value: object) -> str:
    return f"{lever}={value!r}"


def _log2(value: object) -> float:
    assert isinstance(value, int | float)  # a trend is only fitted over a lever whose values are all numbers
    return math.log2(value)


def _numeric(cells: Sequence[Candidate], lever: str) -> bool:
    values = [c.levers[lever] for c in cells if lever in c.levers]
    return all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values)


@dataclass(frozen=True)
class Design:
    """How a cell becomes a row: an intercept; per numeric lever a trend in log2 of its value (centred); per lever
    value a deviation from that trend (a lever that is not numeric: its values' own effects)."""

    trends: dict[str, float]  # numeric lever -> the mean log2 value it is centred on
    values: list[str]  # lever=value columns

    def row(self, cell: Candidate) -> np.ndarray:
        trend = [_log2(cell.levers[lv]) - mid if lv in cell.levers else 0.0 for lv, mid in self.trends.items()]
        keys = {_key(lv, v) for lv, v in cell.levers.items()}
        return np.array([1.0, *trend, *(1.0 if k in keys else 0.0 for k in self.values)])


def _design(cells: Sequence[Candidate]) -> Design:
    levers = sorted({lv for c in cells for lv in c.levers})
    trends = {
        lv: statistics.fmean(_log2(c.levers[lv]) for c in cells if lv in c.levers)
        for lv in levers
        if _numeric(cells, lv)
    }
    return Design(trends, sorted({_key(lv, v) for c in cells for lv, v in c.levers.items()}))


@dataclass(frozen=True)
class Model:
    """The additive model's posterior: the trends and effects, as a normal about a mean, with its covariance."""

    design: Design
    mean: np.ndarray
    cov: np.ndarray

    def at(self, cell: Candidate) -> tuple[float, float]:
        x = self.design.row(cell)
        return float(x @ self.mean), float(np.sqrt(max(x @ self.cov @ x, 0.0)))


def fit(cells: Sequence[Candidate], scores: Mapping[str, float], band: float, noise: float | None = None) -> Model:
    """Bayesian least squares. A priori a trend's slope (per doubling) and a value's effect are near 0: the slope
    within tau, the effect of a numeric lever's value within tau / 3 (the trend carries it to values no cell had),
    a categorical value's within tau; tau is the measured scores' spread (at least NOISE_FLOOR of their mean). A
    score's noise is one boot's spread where replicates measured it (`noise`: std / mean), else half the noise
    band; at least NOISE_FLOOR of the mean."""
    design = _design(cells)
    rows = [c for c in cells if c.name in scores]
    y = np.array([scores[c.name] for c in rows])
    center = float(y.mean())
    scale = max(abs(center), 1e-9)
    tau = max(float(y.std()), NOISE_FLOOR * scale)
    sigma = max(noise if noise is not None else band / 2, NOISE_FLOOR) * scale
    prior = _prior(design, tau, scale)
    x = np.array([design.row(c) for c in rows])
    cov = np.linalg.inv(x.T @ x / sigma**2 + prior)
    mean = cov @ (x.T @ y / sigma**2 + prior @ np.array([center] + [0.0] * (len(prior) - 1)))
    return Model(design, mean, cov)


def _prior(design: Design, tau: float, scale: float) -> np.ndarray:
    """The prior's precision: the intercept free (within 100 x the scores' scale), a trend's slope within tau, a
    numeric lever's value within tau / 3 of its trend, a categorical value within tau."""
    widths = [100.0 * scale, *([tau] * len(design.trends))]
    widths += [tau / 3 if k.split("=", 1)[0] in design.trends else tau for k in design.values]
    return np.diag([1.0 / w**2 for w in widths])


def estimate(
    cells: Sequence[Candidate], scores: Mapping[str, float], cell: Candidate, band: float = 0.03
) -> tuple[float, float]:
    """A cell's estimated score and its uncertainty (one standard deviation), from the measured scores."""
    return fit(cells, scores, band).at(cell)


def _failed_values(cells: Sequence[Candidate], measured: Mapping[str, Measured]) -> set[str]:
    """Lever values every booted cell of which failed (at least one such cell, none that held)."""
    failed: dict[str, bool] = {}
    for cell in cells:
        if cell.name not in measured:
            continue
        ok = measured[cell.name].score is not None
        for lever, value in cell.levers.items():
            k = _key(lever, value)
            failed[k] = failed.get(k, True) and not ok
    return {k for k, bad in failed.items() if bad}


def _opening(
    cells: Sequence[Candidate],
    baseline: str,
    spec: SearchSpec,
    measured: Mapping[str, Measured],
    infeasible: Mapping[str, str],
) -> Candidate | None:
    """The cells booted before the model proposes (`initial` in all): the baseline, then each the feasible cell the
    model knows least about, given the cells booted (the most lever values unlike theirs: the greatest variance of
    its estimate, before any score), sparing a lever value every booted cell of which failed. Each measures the
    levers' effects where the model is blindest: a design that spreads over every lever, not one at a time."""
    booted = set(measured)
    if len(booted) >= spec.initial:
        return None
    base = next((c for c in cells if c.name == baseline), None)
    if base is not None and base.name not in booted and base.name not in infeasible:
        return base
    left = [c for c in cells if c.name not in booted and c.name not in infeasible]
    failed = _failed_values(cells, measured)
    left = [c for c in left if not any(_key(lv, v) in failed for lv, v in c.levers.items())] or left
    if not left:
        return None
    design = _design(cells)
    rows = np.array([design.row(c) for c in cells if c.name in booted]).reshape(-1, len(design.row(cells[0])))
    cov = np.linalg.inv(rows.T @ rows + _prior(design, 1.0, 1.0))
    return max(left, key=lambda c: float(design.row(c) @ cov @ design.row(c)))


def _stop(spec: SearchSpec, measured: Mapping[str, Measured], history: Sequence[str], band: float) -> SearchStop | None:
    if spec.budget_boots is not None and len(measured) >= spec.budget_boots:
        return SearchStop(f"the budget of {spec.budget_boots} boots is spent")
    used = sum(m.gpu_s for m in measured.values())
    if spec.budget_gpu_s is not None and used >= spec.budget_gpu_s:
        return SearchStop(f"the budget of {spec.budget_gpu_s:g} GPU-seconds is spent ({used:.0f} used)")
    scores = [(n, measured[n].score) for n in history if n in measured]
    best, since = None, 0
    for _, score in scores:
        if score is not None and beats(score, best, band):
            best, since = score, 0
        else:
            since += 1
    if since >= spec.patience and len(scores) > spec.initial:
        return SearchStop(f"{since} cells in a row did not beat the best by more than the {100 * band:.1f}% noise band")
    return None


def propose(
    cells: Sequence[Candidate],
    baseline: str,
    measured: Mapping[str, Measured],
    history: Sequence[str],
    spec: SearchSpec,
    *,
    band: float,
    noise: float | None = None,
    infeasible: Mapping[str, str] | None = None,
) -> Proposal | SearchStop:
    """The next cell to boot and why, or why the search stops. `history`: the booted cells in order; `band`: the
    noise band as a fraction; `noise`: one boot's spread (std / mean) where replicates measured it; `infeasible`:
    cells the memory model rules out, and why."""
    infeasible = infeasible or {}
    if not any(c.name not in measured and c.name not in infeasible for c in cells):
        return SearchStop("every feasible cell has booted" if measured else "no feasible cell to boot")
    if stop := _stop(spec, measured, history, band):
        return stop
    step = next_cell(cells, baseline, measured, spec, band=band, noise=noise, infeasible=infeasible)
    assert step is not None  # a feasible cell is left
    if step.upper is not None and step.best is not None and not beats(step.upper, step.best, band):
        return SearchStop(
            f"no cell left is predicted, even at its upper bound ({step.upper:.4g}), to beat the best "
            f"({step.best:.4g}) by more than the {100 * band:.1f}% noise band"
        )
    return step


def next_cell(
    cells: Sequence[Candidate],
    baseline: str,
    measured: Mapping[str, Measured],
    spec: SearchSpec,
    *,
    band: float,
    noise: float | None = None,
    infeasible: Mapping[str, str] | None = None,
) -> Proposal | None:
    """The cell the search would boot next, whatever its stop rules say (None: no feasible cell is left): what
    propose() proposes while it does not stop, and what a replay at a larger budget boots after its stop."""
    infeasible = infeasible or {}
    left = [c for c in cells if c.name not in measured and c.name not in infeasible]
    if not left:
        return None
    if first := _opening(cells, baseline, spec, measured, infeasible):
        if first.name not in infeasible:
            return Proposal(
                first.name,
                "an opening cell: the baseline, then the cell the model knows least about (the most lever values "
                "unlike those booted)",
            )
    return _by_model(cells, left, measured, spec, band, noise)


def _by_model(
    cells: Sequence[Candidate],
    left: Sequence[Candidate],
    measured: Mapping[str, Measured],
    spec: SearchSpec,
    band: float,
    noise: float | None,
) -> Proposal:
    scores = {n: m.score for n, m in measured.items() if m.score is not None}
    if not scores:
        return Proposal(left[0].name, "no cell has held yet: the next in the space's order")
    failed = _failed_values(cells, measured)
    best = max(scores.values())
    rng, model = random.Random(spec.seed), fit(cells, scores, band, noise)
    ranked = []
    for cell in left:
        value, unc = model.at(cell)
        doomed = sum(1 for lv, v in cell.levers.items() if _key(lv, v) in failed)
        upper = value + KAPPA * unc - doomed * abs(best)
        ranked.append((upper, rng.random(), cell, value))
    upper, _, cell, value = max(ranked, key=lambda r: (r[0], r[1]))
    return Proposal(
        cell.name,
        f"the highest upper bound among {len(left)} cells left: estimated {value:.4g}, at most {upper:.4g}, "
        f"against the best {best:.4g}",
        estimate=value,
        upper=upper,
        best=best,
    )


__all__ = [
    "Candidate",
    "Measured",
    "Model",
    "Proposal",
    "SearchStop",
    "beats",
    "estimate",
    "fit",
    "next_cell",
    "propose",
]
