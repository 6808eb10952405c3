"""A campaign's search at the edge: the campaign's plan in the experiment wing when it searches. The wing boots the
cell policy/search.py proposes, one at a time, each by the one measurement loop (it leaves the same verdict.yml a
grid's cell does); this keeps search.yml, a step per proposal (what and why, the model's estimate, what it
measured) and why it stopped.

A search resumes like a grid: the verdicts on disk are what it measured, and a step whose cell has no verdict yet
(a run killed while it booted) is run again before anything new is proposed. A red cell is feedback, not the end
of the search: its score is no score, and its lever values count against the cells that share them. A cell the
memory model predicts infeasible on the target (the plan's `predicted`) is never proposed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from redline.ledger.search_file import read_search_log, write_search_log
from redline.models.campaign_plan import CampaignPlan
from redline.models.campaign_results import CellVerdict, ChampionReport
from redline.models.search import ProposalRecord, SearchLog, SearchState
from redline.ops.campaign.noise import campaign_boots, champion_of
from redline.ops.campaign.replicates import replicate_owed
from redline.ops.campaign_read import Boots, Loaded
from redline.ops.experiment.run import Stop
from redline.policy import search as policy
from redline.policy.boots import campaign_band


def scores(report: ChampionReport, verdicts: Mapping[str, CellVerdict]) -> dict[str, float | None]:
    """Each measured cell's score, higher better, read off the champion's own report (ops/campaign/noise.py
    champion_of: every cell over its boots, by the band champion_select judges by), so the search climbs what the
    champion is chosen by. One workload: the focus figure the cell is ranked by. Several: 1 plus the gain over the
    baseline that the champion's combine rule ranks it by (policy/combine.py: the smallest for all, the weighted mean
    for weights); None for every cell while the baseline is not ranked on every workload. None for a red or unranked
    cell, and for one the champion holds back by a guard on any workload (mixed: a win on the score with a figure
    worse beyond the noise), which is never crowned: the search's best is a cell the champion could name."""
    ranked = {c.cell: c for c in [*report.ranked, *(c for g in report.other_regimes for c in g.cells)]}
    held = {c.cell for r in report.workloads or [report] for c in r.ranked if c.outcome == "mixed"}
    if not report.workloads:
        sign = -1.0 if report.direction == "lower" else 1.0
        figures = {n: c.score for n, c in ranked.items() if n not in held}
        return {n: None if (f := figures.get(n)) is None else sign * f for n in verdicts}
    if report.outcome == "no_baseline":
        return dict.fromkeys(verdicts)
    gains = {n: c.delta_pct for n, c in ranked.items() if n not in held}
    return {n: 1.0 if n == report.baseline else None if (g := gains.get(n)) is None else 1 + g / 100 for n in verdicts}


def candidates(plan: CampaignPlan, verdicts: Mapping[str, CellVerdict]) -> list[policy.Candidate]:
    """Each cell as the search sees it: its levers, and its engine where the cells boot more than one; the levers it
    leaves unset as it runs them (policy/search.py as_run: its serve config, its boot log once booted)."""
    several = len(plan.engines) > 1
    space = [policy.Candidate(c.name, {**c.levers, **({"engine": c.engine} if several else {})}) for c in plan.cells]
    return [
        policy.as_run(c, p.serve, v.boot.signals if (v := verdicts.get(c.name)) else None, space)
        for c, p in zip(space, plan.cells, strict=True)
    ]


def _measured(verdicts: dict[str, CellVerdict], score: Mapping[str, float | None]) -> dict[str, policy.Measured]:
    return {
        n: policy.Measured(score[n], gpu_s=v.wall_s * max(v.context.hardware.gpu_count, 1)) for n, v in verdicts.items()
    }


def _history(log: SearchLog, verdicts: dict[str, CellVerdict]) -> list[str]:
    """The booted cells in order: those a run before the search booted, then the search's own."""
    logged = [s.cell for s in log.steps if s.cell in verdicts]
    return [n for n in verdicts if n not in logged] + [c for c in logged if c is not None]


def _next(
    loaded: Loaded, plan: CampaignPlan, log: SearchLog, boots: Boots, score: Mapping[str, float | None]
) -> ProposalRecord:
    """The cell to boot now (a step killed before its verdict first), or the stop; `score`: each booted cell's."""
    verdicts = boots.verdicts
    last = log.steps[-1] if log.steps else None
    if last is not None and last.cell is not None and last.cell not in verdicts:
        return last
    spec = loaded.campaign.search
    assert spec is not None  # only a campaign with search: is searched
    infeasible = {c.name: c.predicted.why for c in plan.cells if c.predicted and c.predicted.feasible == "no"}
    band = campaign_band(loaded.campaign, verdicts, boots.replicates, boots.earlier)  # the champion's own
    found = policy.propose(
        candidates(plan, verdicts),
        plan.baseline,
        _measured(verdicts, score),
        _history(log, verdicts),
        spec,
        band=band.pct / 100,
        noise=band.cv,
        infeasible=infeasible,
    )
    at, n = datetime.now(UTC), len(log.steps) + 1
    if isinstance(found, policy.SearchStop):
        return ProposalRecord(step=n, at=at, why=found.why)
    return ProposalRecord(step=n, at=at, cell=found.cell, why=found.why, estimate=found.estimate, upper=found.upper)


class Search:
    """A campaign's plan when it searches: the cell to boot next is the one the search proposes from the verdicts on
    disk, each proposal kept in search.yml before its boot, and what it measured once its verdict is there."""

    def __init__(self, loaded: Loaded, plan: CampaignPlan) -> None:
        self.loaded, self.plan = loaded, plan
        self.log = read_search_log(loaded.results, loaded.names) or SearchLog(campaign=loaded.campaign.name)

    def _write(self, steps: list[ProposalRecord], stopped: str | None = None) -> None:
        self.log = self.log.model_copy(update={"steps": steps, "stopped": stopped})
        write_search_log(self.loaded.results, self.log)

    def next(self) -> str | Stop:
        """The cell to boot now (a proposal killed before its verdict first), or why the search stops. A search that
        stopped stays stopped while its stop holds; given a larger budget (or more patience) it goes on."""
        boots = campaign_boots(self.loaded)
        score = scores(champion_of(self.loaded, boots), boots.verdicts)
        last = self.log.steps[-1] if self.log.steps else None
        if last is not None and last.cell in boots.verdicts and last.measured is None:  # what it measured
            if (measured := score[last.cell]) is not None:  # a red cell, or one held back by a guard: no score
                self._write([*self.log.steps[:-1], last.model_copy(update={"measured": measured})])
        step = _next(self.loaded, self.plan, self.log, boots, score)
        if step.cell is None:
            if self.log.stopped != step.why:
                self._write([*self.log.steps, step], stopped=step.why)
            return Stop(step.why)
        if self.log.stopped is not None or not self.log.steps or self.log.steps[-1] is not step:
            self._write([*self.log.steps, step])  # the proposal is on disk before its boot (a stop lifted)
        return step.cell


def search_state(loaded: Loaded, plan: CampaignPlan) -> SearchState:
    """The search as search.yml and the verdicts say it, and what campaign_run would do now: what a dry run, the plan
    and campaign_status all show."""
    spec = loaded.campaign.search
    assert spec is not None  # only a campaign with search: is searched
    log = read_search_log(loaded.results, loaded.names) or SearchLog(campaign=loaded.campaign.name)
    boots = campaign_boots(loaded)
    verdicts = boots.verdicts
    return SearchState(
        budget_boots=spec.budget_boots,
        budget_gpu_s=spec.budget_gpu_s,
        booted=len(verdicts),
        gpu_s=round(sum(v.wall_s * v.context.hardware.gpu_count for v in verdicts.values()), 2),
        proposals=log.steps,
        stopped=log.stopped,
        resume=_resume(loaded, plan, log, boots),
    )


def _resume(loaded: Loaded, plan: CampaignPlan, log: SearchLog, boots: Boots) -> str:
    last = log.steps[-1] if log.steps else None
    if last is not None and last.cell is not None and last.cell not in boots.verdicts:
        return f"boots {last.cell} again: step {last.step} proposed it and has no verdict (its run was stopped)"
    initial = loaded.campaign.search.initial if loaded.campaign.search else 0
    if log.stopped is None:  # as the run: the best booted again once the opening cells are judged
        owed = replicate_owed(loaded, 1, initial)
    else:  # then the top two's
        owed = replicate_owed(loaded, 2)
    if owed is not None:
        return f"boots {owed[0]} again (its boot {owed[1]}): the noise band is measured between the top cells' boots"
    step = _next(loaded, plan, log, boots, scores(champion_of(loaded, boots), boots.verdicts))
    if step.cell is not None:
        again = f" (it had stopped: {log.stopped}; its spec now allows more)" if log.stopped is not None else ""
        return f"proposes {step.cell}: {step.why}{again}"
    return f"boots nothing: it stopped ({step.why})" if log.stopped is not None else f"stops: {step.why}"


__all__ = ["Search", "candidates", "scores", "search_state"]
