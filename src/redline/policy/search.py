"""Search: which cell of a campaign's space to boot next, from what the cells booted so far measured, and when to
stop. Pure: the runner asks it after every cell, with the verdicts on disk, so a search resumes after a kill like a
grid does (the same verdicts give the same proposal).

The model (search_model.py) is Bayesian over the levers: additive, with interactions and each cell's own part
shrunk toward it, its size weighed by how well it explains the scores measured, so a lever value (or a pair of
them) no booted cell had keeps a wide uncertainty and draws a boot. A cell that leaves a lever unset (a cell of the
engine's defaults) takes the value it runs with (search_space.py as_run), so it is predicted and learned from like
any other. The next cell is the one with the highest upper bound (the estimate plus KAPPA standard deviations),
among the cells not yet booted and not ruled out (a cell the memory model predicts infeasible is never proposed; a
lever value every booted cell of which failed counts against its cells). It starts with the baseline, then the
cells the model knows least about (the widest uncertainty, given the cells booted), `initial` in all.

bench/search_replay.py sets it against random search and TPE at equal boot budgets over the recorded landscapes.

It stops when the budget (boots, GPU-seconds) is spent, when `patience` cells in a row that the model proposed did
not beat the best by more than the noise band (the opening's cells are booted to learn, not to win), when no cell
left is predicted, even at its upper bound, to beat the best by more than the band (the gap rule), or when every
cell has booted. Each proposal says why it proposed its cell, and the stop says why it stopped.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from redline.models.search import SearchSpec
from redline.policy.search_model import fit
from redline.policy.search_space import Candidate, as_run, lever_key

KAPPA = 2.0  # the upper bound: the estimate plus this many standard deviations


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


def beats(score: float, best: float | None, band: float) -> bool:
    """Whether score is better than best by more than the noise band (scores are signed: higher is better)."""
    return best is None or score - best > band * abs(best)


def _failed_values(cells: Sequence[Candidate], measured: Mapping[str, Measured]) -> set[str]:
    """Lever values every booted cell of which failed (at least one such cell, none that held)."""
    failed: dict[str, bool] = {}
    for cell in cells:
        if cell.name not in measured:
            continue
        ok = measured[cell.name].score is not None
        for lever, value in cell.levers.items():
            k = lever_key(lever, value)
            failed[k] = failed.get(k, True) and not ok
    return {k for k, bad in failed.items() if bad}


def _opening(
    cells: Sequence[Candidate],
    baseline: str,
    spec: SearchSpec,
    measured: Mapping[str, Measured],
    infeasible: Mapping[str, str],
    band: float,
    noise: float | None,
) -> Candidate | None:
    """The cells booted before the model proposes (`initial` in all): the baseline, then each the feasible cell the
    model knows least about, given the scores measured (the widest uncertainty: the most lever values, and pairs of
    them, unlike those booted), sparing a lever value every booted cell of which failed. Each measures the levers'
    effects where the model is blindest: a design that spreads over every lever, not one at a time."""
    if len(measured) >= spec.initial:
        return None
    base = next((c for c in cells if c.name == baseline), None)
    if base is not None and base.name not in measured and base.name not in infeasible:
        return base
    left = [c for c in cells if c.name not in measured and c.name not in infeasible]
    failed = _failed_values(cells, measured)
    left = [c for c in left if not any(lever_key(lv, v) in failed for lv, v in c.levers.items())] or left
    if not left:
        return None
    scores = _scores(measured)
    model, scale = fit(cells, scores, band, noise), _scale(scores)
    return max(left, key=lambda c: _level(model.at(c)[1], scale))  # ties: the space's order


def _scale(scores: Mapping[str, float]) -> float:
    return max((abs(s) for s in scores.values()), default=1.0) or 1.0


def _level(value: float, scale: float) -> float:
    """A figure to rank by, to 1e-9 of the scores' scale: cells a symmetric design ties stay tied, whatever the
    last bits of the arithmetic (its order can differ between machines and thread counts), so a resumed search
    breaks the tie the same way."""
    return round(value / scale, 9)


def _scores(measured: Mapping[str, Measured]) -> dict[str, float]:
    return {n: m.score for n, m in measured.items() if m.score is not None}


def _stop(spec: SearchSpec, measured: Mapping[str, Measured], history: Sequence[str], band: float) -> SearchStop | None:
    if spec.budget_boots is not None and len(measured) >= spec.budget_boots:
        return SearchStop(f"the budget of {spec.budget_boots} boots is spent")
    used = sum(m.gpu_s for m in measured.values())
    if spec.budget_gpu_s is not None and used >= spec.budget_gpu_s:
        return SearchStop(f"the budget of {spec.budget_gpu_s:g} GPU-seconds is spent ({used:.0f} used)")
    best, since = None, 0
    for i, name in enumerate(n for n in history if n in measured):
        score = measured[name].score
        if score is not None and beats(score, best, band):
            best, since = score, 0
        elif i >= spec.initial:  # an opening cell is booted to learn from, not to beat the best
            since += 1
    if since >= spec.patience:
        return SearchStop(
            f"{since} cells in a row did not beat the best by more than the {100 * band:.1f}% noise band (the "
            "model's, after the opening)"
        )
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
    if first := _opening(cells, baseline, spec, measured, infeasible, band, noise):
        if first.name not in infeasible:
            return Proposal(
                first.name,
                "an opening cell: the baseline, then the cell the model knows least about (the widest "
                "uncertainty, given the cells booted)",
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
    scores = _scores(measured)
    if not scores:
        return Proposal(left[0].name, "no cell has held yet: the next in the space's order")
    failed = _failed_values(cells, measured)
    best = max(scores.values())
    rng, model = random.Random(spec.seed), fit(cells, scores, band, noise)
    ranked = []
    for cell in left:
        value, unc = model.at(cell)
        doomed = sum(1 for lv, v in cell.levers.items() if lever_key(lv, v) in failed)
        upper = value + KAPPA * unc - doomed * abs(best)
        ranked.append((_level(upper, abs(best) or 1.0), rng.random(), upper, cell, value))
    _, _, upper, cell, value = max(ranked, key=lambda r: (r[0], r[1]))
    return Proposal(
        cell.name,
        f"the highest upper bound among {len(left)} cells left: estimated {value:.4g}, at most {upper:.4g}, "
        f"against the best {best:.4g}",
        estimate=value,
        upper=upper,
        best=best,
    )


__all__ = [
    "KAPPA",
    "Candidate",
    "Measured",
    "Proposal",
    "SearchStop",
    "as_run",
    "beats",
    "next_cell",
    "propose",
]
