"""A campaign's search at the edge: the runner boots the cell policy/search.py proposes, one at a time, each by the
one measurement loop (it leaves the same verdict.yml a grid's cell does), and keeps search.yml, a step per proposal
(what and why, the model's estimate, what it measured) and why it stopped.

A search resumes like a grid: the verdicts on disk are what it measured, and a step whose cell has no verdict yet
(a run killed while it booted) is run again before anything new is proposed. A red cell is feedback, not the end
of the search: its score is no score, and its lever values count against the cells that share them. A cell the
memory model predicts infeasible on the target (the plan's `predicted`) is never proposed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import NamedTuple

from redline.ledger.campaign_file import read_verdicts
from redline.ledger.search_file import read_search_log, write_search_log
from redline.models.campaign import Campaign
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import CellVerdict
from redline.models.search import SearchLog, SearchStep
from redline.ops.campaign.load import Loaded
from redline.policy.noise import DEFAULT_BAND_PCT
from redline.policy.ranking import cell_sample
from redline.policy.search import Candidate, Measured, Stop, propose
from redline.policy.workload_champion import select

RunCell = Callable[[CellPlan, int, int], Awaitable[CellVerdict]]


class Searched(NamedTuple):
    """Why a search stopped, and every cell it measured: those of this run and of the runs it resumed."""

    why: str
    verdicts: list[CellVerdict]


def score_of(campaign: Campaign, verdict: CellVerdict) -> float | None:
    """A cell's score as the champion ranks it, signed so that higher is better; None for a red or unranked cell."""
    sample, _ = cell_sample(campaign, verdict) if verdict.verdict == "green" else (None, None)
    if sample is None or sample.mean is None:
        return None
    return -sample.mean if campaign.focus == "latency" else sample.mean


def scores(campaign: Campaign, baseline: str, verdicts: dict[str, CellVerdict]) -> dict[str, float | None]:
    """Each measured cell's score, higher better. Across several workloads: 1 plus the gain over the baseline that the
    champion's combine rule ranks it by (policy/workload_champion: the smallest for all, the weighted mean for
    weights), so the search climbs what the champion will be chosen by; None for a cell not ranked on every
    workload, and for every cell while the baseline is not."""
    if campaign.workloads is None:
        return {n: score_of(campaign, v) for n, v in verdicts.items()}
    base = verdicts.get(baseline)
    if base is None or any(score_of(campaign, base.of_workload(w)) is None for w in campaign.workloads):
        return dict.fromkeys(verdicts)
    gains = {c.cell: c.delta_pct for c in select(campaign, list(verdicts), baseline, verdicts).ranked}
    return {n: 1.0 if n == baseline else None if (g := gains.get(n)) is None else 1 + g / 100 for n in verdicts}


def candidates(plan: CampaignPlan) -> list[Candidate]:
    """Each cell as the search sees it: its levers, and its engine where the cells boot more than one."""
    several = len(plan.engines) > 1
    return [Candidate(c.name, {**c.levers, **({"engine": c.engine} if several else {})}) for c in plan.cells]


def _measured(loaded: Loaded, baseline: str, verdicts: dict[str, CellVerdict]) -> dict[str, Measured]:
    score = scores(loaded.campaign, baseline, verdicts)
    return {n: Measured(score[n], gpu_s=v.wall_s * max(v.context.hardware.gpu_count, 1)) for n, v in verdicts.items()}


def _history(log: SearchLog, verdicts: dict[str, CellVerdict]) -> list[str]:
    """The booted cells in order: those a run before the search booted, then the search's own."""
    logged = [s.cell for s in log.steps if s.cell in verdicts]
    return [n for n in verdicts if n not in logged] + [c for c in logged if c is not None]


def _next(loaded: Loaded, plan: CampaignPlan, log: SearchLog, verdicts: dict[str, CellVerdict]) -> SearchStep:
    """The cell to boot now (a step killed before its verdict first), or the stop."""
    last = log.steps[-1] if log.steps else None
    if last is not None and last.cell is not None and last.cell not in verdicts:
        return last
    spec = loaded.campaign.search
    assert spec is not None  # only a campaign with search: is searched
    infeasible = {c.name: c.predicted.why for c in plan.cells if c.predicted and c.predicted.feasible == "no"}
    band = (loaded.campaign.noise_band_pct or DEFAULT_BAND_PCT) / 100
    found = propose(
        candidates(plan),
        plan.baseline,
        _measured(loaded, plan.baseline, verdicts),
        _history(log, verdicts),
        spec,
        band=band,
        infeasible=infeasible,
    )
    at, n = datetime.now(UTC), len(log.steps) + 1
    if isinstance(found, Stop):
        return SearchStep(step=n, at=at, why=found.why)
    return SearchStep(step=n, at=at, cell=found.cell, why=found.why, estimate=found.estimate, upper=found.upper)


async def search(loaded: Loaded, plan: CampaignPlan, run_cell: RunCell) -> tuple[list[CellVerdict], Searched]:
    """Boot what the search proposes until it stops; the verdicts it made now, and why it stopped with every
    verdict it holds (a resumed search's earlier runs included)."""
    results, cells = loaded.results, {c.name: c for c in plan.cells}
    log = read_search_log(results, cells) or SearchLog(campaign=loaded.campaign.name)
    made: list[CellVerdict] = []
    while True:
        verdicts = read_verdicts(results, loaded.names)
        step = _next(loaded, plan, log, verdicts)
        if step.cell is None:
            log = log.model_copy(update={"steps": [*log.steps, step], "stopped": step.why})
            write_search_log(results, log)
            return made, Searched(step.why, list(verdicts.values()))
        if not log.steps or log.steps[-1] is not step:
            log = log.model_copy(update={"steps": [*log.steps, step]})
            write_search_log(results, log)  # the proposal is on disk before its boot
        verdict = await run_cell(cells[step.cell], len(verdicts), len(plan.cells))
        made.append(verdict)
        measured = scores(loaded.campaign, plan.baseline, {**verdicts, verdict.cell: verdict})[verdict.cell]
        done = step.model_copy(update={"measured": measured})
        log = log.model_copy(update={"steps": [*log.steps[:-1], done]})
        write_search_log(results, log)


__all__ = ["Searched", "candidates", "score_of", "scores", "search"]
