"""campaign_run: boot each cell once, bench it at every concurrency, stop it, write its verdict.

    result = await campaign_run(path, target, i_understand_this_submits_jobs=True)

A campaign is an experiment of the one wing (ops/experiment/run.py): its plan is `Cells` (the grid's cells in
order, up to `parallel` at once; or, with `search:`, the cell the search proposes next), its judge the cell verdict
(ops/campaign/verdict.py). A cell with a verdict is done: a re-run resumes after it. A red cell stops further cells
from starting unless the campaign says continue_on_red.

Here: the plan the wing runs, the campaign as a kind of experiment (`CampaignKind`: its cells made by its rules,
the refusal of a red cell; the rest of its opening is the wing's, ops/experiment/prepare.py), and the run at a
terminal: the acknowledgement, then the wing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from redline.errors import InputError
from redline.ledger.campaign_file import boot_name, cells_of, read_verdicts
from redline.ledger.results import Results
from redline.models import ServeConfig, Widenings
from redline.models.campaign import Campaign
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import CampaignRunResult, CellVerdict
from redline.ops.campaign.boundary import boundary_probes
from redline.ops.campaign.plan import check_parallel, planned
from redline.ops.campaign.replicates import replicate_owed
from redline.ops.campaign.search import Search
from redline.ops.campaign.verdict import CellJudge
from redline.ops.campaign_read import Loaded, load_campaign
from redline.ops.evidence.versions import EngineVersions
from redline.ops.experiment.prepare import Done, Opening, Prepared, run_kind
from redline.ops.experiment.run import Stop, Unit, Write
from redline.ops.measured_boot import Then
from redline.ops.request_base import ACK_FLAG, require_ack
from redline.ops.session import Progress, ServeSession, executables
from redline.policy.campaign import wanted_cells
from redline.policy.planned import Wanted
from redline.policy.workload import Bench, boot_benches, goodput_slo
from redline.targets import Target


@dataclass
class Cells:
    """A campaign's plan as the wing runs it: its cells without a verdict, in order (or as its search proposes them)."""

    experiment: CampaignKind
    plan: CampaignPlan
    search: Search | None = field(init=False, default=None)
    stopped: Stop | None = field(init=False, default=None)  # why the search stopped, once it has

    def __post_init__(self) -> None:
        self.loaded = self.experiment.loaded
        self.spec = self.loaded.campaign
        if self.spec.search is not None:
            self.search = Search(self.loaded, self.plan)

    @property
    def parallel(self) -> int:
        return self.loaded.campaign.parallel

    def todo(self) -> int:
        return self.plan.boots + self.plan.replicates  # the plan's own count: what a dry run said

    def unit(self, name: str, replicate: int = 1) -> Unit:
        cell = next(c for c in self.plan.cells if c.name == name)
        return Unit(boot_name(name, replicate), cell.index, cell.engine, cell.serve)

    def next(self, ran: Mapping[str, CellVerdict | None]) -> Unit | Stop | None:
        """The next cell without a verdict (or the search's proposal), unless a red one stops the campaign; once every
        cell planned is judged (or the search stopped), the fresh boots the top two cells owe (`replicates`); None
        while a running cell must be judged before that is known."""
        if self.search is not None:
            return self._searched()
        if any(v is not None and v.verdict == "red" for v in ran.values()) and not self.spec.continue_on_red:
            return Stop("a red cell stops the campaign (continue_on_red is false)")
        todo = [c for c in self.plan.cells if c.done is None and c.name not in ran]
        if todo:
            return self.unit(todo[0].name)
        if None in ran.values():
            return None  # the top cells are known once every cell is judged
        return self.replicate(top=2) or Stop()

    def _searched(self) -> Unit | Stop:
        """The search's proposal (a red cell is feedback to it, not its end); once its first cells are judged, the
        best of them booted again first, so the band its stop rule uses is measured; once it stops, the top two's."""
        assert self.search is not None
        if self.stopped is None:
            spec = self.spec.search
            found = self.replicate(top=1, judged=spec.initial if spec else 0) or self.search.next()
            if not isinstance(found, Stop):
                return found if isinstance(found, Unit) else self.unit(found)
            self.stopped = found
        return self.replicate(top=2) or self.stopped

    def replicate(self, top: int, judged: int = 0) -> Unit | None:
        owed = replicate_owed(self.loaded, top, judged)
        return self.unit(*owed) if owed is not None else None

    def benches(self, unit: Unit) -> list[Bench]:
        campaign = self.loaded.campaign
        return boot_benches(campaign.loads(), campaign.warmup_requests, campaign.repeats, goodput_slo(campaign.sla))

    def then(self, unit: Unit, session: ServeSession, write: Write) -> Then | None:
        campaign = self.loaded.campaign
        if campaign.boundary is None:
            return None
        return boundary_probes(
            session, unit.serve, campaign, campaign.boundary, deadline_s=campaign.bench_deadline_s, write=write
        )

    def configs(self) -> dict[str, tuple[str, ServeConfig]]:
        return {c.name: (c.engine, c.serve) for c in self.plan.cells}


@dataclass(frozen=True)
class CampaignKind:
    """A campaign as the wing opens it (ops/experiment/prepare.py): its cells (a grid's, or what its search may propose)
    made by the campaign's rules, its plan `Cells` and its judge `CellJudge` over them once prepared."""

    loaded: Loaded

    word, what, alike, record = "campaign", "cell", False, "verdict"
    again = "or restore the file"
    model_fix = "fix model: (or base.from_ladder) in the campaign"

    @property
    def spec(self) -> Campaign:
        return self.loaded.campaign

    @property
    def workspace(self) -> Path:
        return self.loaded.workspace

    @property
    def results(self) -> Results:
        return cells_of(self.loaded.results)

    def wanted(self, target: Target | None) -> list[Wanted[CellPlan]]:
        exes = executables(target) if target is not None else None
        return wanted_cells(self.loaded.campaign, self.loaded.base, self.loaded.cells, exes)

    def check(self, target: Target) -> None:
        check_parallel(self.loaded.campaign, target)

    def done(self, prepared: Prepared[CellPlan]) -> list[Done]:
        """Each cell with a verdict (its first boot's); a red one stops a fail-fast campaign here."""
        verdicts = read_verdicts(self.loaded.results, self.loaded.names)
        for name, verdict in verdicts.items():
            if verdict.verdict == "red" and not self.spec.continue_on_red:
                raise InputError(
                    f"cell {name!r} is red ({verdict.reason}): delete {self.results.unit_dir(name)} "
                    "to run it again, or set continue_on_red: true to go on past it"
                )
        return [
            Done(name, v.context.engine.name, v.context.serve, prepared.config(name)) for name, v in verdicts.items()
        ]

    def opened(self, prepared: Prepared[CellPlan], target: Target, dry_run: bool) -> tuple[Cells, CellJudge]:
        plan = planned(self.loaded, prepared)
        versions = {e: prepared.version(e) for e in plan.engines}
        files = {m: prepared.files(m) for m in dict.fromkeys(c.serve.model for c in plan.cells)}
        return Cells(self, plan), CellJudge(self.loaded, plan, versions, files)


async def campaign_run(
    path: str | Path,
    target: Target,
    *,
    i_understand_this_submits_jobs: bool,
    dry_run: bool = False,
    progress: Progress | None = None,
    widening: Widenings | None = None,
    skip_known_good: bool = False,
    workspace: Path | None = None,
    versions: EngineVersions | None = None,
) -> CampaignRunResult:
    """Run the campaign on target: each cell without a verdict is booted once, benched, stopped and judged.

    Fails closed without the acknowledgement; a dry run returns the plan and starts nothing.
    Up to the campaign's `parallel` cells run at once (a target that runs that many servers at once).
    A matching known-good entry is applied to every cell unless skip_known_good; the plan's gates say so.
    `widening`: the server config's, per engine (each cell is admitted with its engine's). `workspace`: the
    server's, that base.from_ladder stays in (default: the one the file's layout names). `versions`: the engine
    versions the session knows (asked once per target per server); none: asked.
    """
    require_ack(i_understand_this_submits_jobs, "campaign_run", dry_run=dry_run)
    kind = CampaignKind(load_campaign(path, workspace))  # read once here: the file may have changed since a check
    opening = Opening(skip_known_good, widening, versions or EngineVersions())
    return await run_kind(kind, target, tool="campaign_run", dry_run=dry_run, opening=opening, progress=progress)


__all__ = ["ACK_FLAG", "CampaignKind", "Cells", "campaign_run"]
