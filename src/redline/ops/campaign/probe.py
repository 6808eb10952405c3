"""A third kind of experiment on the wing: a campaign's cells probed for their load boundary, each on a boot of its
own, warmed up and then probed (the probe a goodput campaign runs after a cell's listed benches, as an experiment).

    result = await probe_run("campaigns/c1.yml", ["mnbt8192"], target, i_understand_this_submits_jobs=True)

What is its own is its Kind (the cells named, made by the campaign's rules), its plan (`Probes`: each cell once, its
warm-up, then ops/campaign/boundary.py's probes) and its judge (`ProbeJudge`: the boundary each cell's probes found).
Everything else is the wing's (ops/experiment/): the target surveyed once, the known-good entry, the gates, the
admission, the prediction, the resume check against each cell's record, the lock, the servers a killed run left,
the measured boot. A cell with a record is done: a re-run resumes after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from redline.errors import InputError
from redline.ledger.results import Results
from redline.models import ServeConfig, Widenings
from redline.models.campaign import Campaign
from redline.models.campaign_plan import CellPlan
from redline.models.load_boundary import BoundarySpec
from redline.models.probe import ProbeRecord, ProbeResult
from redline.ops.campaign.boundary import boundary_probes, probes_of
from redline.ops.campaign_read import Loaded, load_campaign
from redline.ops.evidence.versions import EngineVersions
from redline.ops.experiment.prepare import Done, Opening, Prepared, run_kind
from redline.ops.experiment.run import Stop, Unit, Write
from redline.ops.measured_boot import MeasuredBoot, Then
from redline.ops.request_base import ACK_FLAG, require_ack
from redline.ops.session import Progress, ServeSession, executables
from redline.policy import load_boundary
from redline.policy.campaign import wanted_cells
from redline.policy.planned import Wanted
from redline.policy.workload import Bench, boot_benches
from redline.targets import HostInfo, Target


@dataclass(frozen=True)
class ProbeKind:
    """The probe as the wing opens it: the cells named, by the campaign's rules, with max_num_seqs raised to the
    probe's highest concurrency as a goodput campaign's are."""

    loaded: Loaded
    cells: list[str]
    boundary: BoundarySpec

    word, what, alike, record = "probe", "cell", False, "boundary"
    again = "or probe the cell under another name"
    model_fix = "fix model: (or base.from_ladder) in the campaign"

    @property
    def spec(self) -> Campaign:
        return self.loaded.campaign.model_copy(update={"boundary": self.boundary})

    @property
    def workspace(self) -> Path:
        return self.loaded.workspace

    @property
    def results(self) -> Results:
        where = self.loaded.results
        return Results(where.parent, f"{where.name}/probes", "cells", "boundary.yml", "probe.lock", "probe")

    def wanted(self, target: Target | None) -> list[Wanted[CellPlan]]:
        every = wanted_cells(self.spec, self.loaded.base, self.loaded.cells, executables(target) if target else None)
        return [w for w in every if w.name in self.cells]

    def check(self, target: Target) -> None:
        if unknown := [c for c in self.cells if c not in self.loaded.names]:
            raise InputError(
                f"cells: {', '.join(unknown)} not in the campaign; its cells: {', '.join(self.loaded.names)}"
            )
        if not self.spec.latency_sla or self.spec.workloads is not None:
            raise InputError(
                "sla: a probe needs one workload: and a latency limit in sla (p99_ttft_ms, median_tpot_ms)"
            )

    def done(self, prepared: Prepared[CellPlan]) -> list[Done]:
        found = {c.name: self.results.read_record(c.name, ProbeRecord) for c in prepared.configs}
        return [Done(n, r.engine, r.serve, prepared.config(n)) for n, r in found.items() if r is not None]

    def opened(self, prepared: Prepared[CellPlan], target: Target, dry_run: bool) -> tuple[Probes, ProbeJudge]:
        probes = Probes(self, prepared, {d.unit for d in self.done(prepared)})
        return probes, ProbeJudge(self, prepared)


@dataclass
class Probes:
    """The probe's plan: each cell not yet probed, in the campaign's order, one at a time."""

    probe: ProbeKind
    prepared: Prepared[CellPlan]
    probed: set[str] = field(default_factory=set)

    kind = "probe"
    parallel = 1

    @property
    def spec(self) -> Campaign:
        return self.probe.spec

    @property
    def results(self) -> Results:
        return self.probe.results

    @property
    def workspace(self) -> Path:
        return self.probe.workspace

    def todo(self) -> int:
        return sum(c.name not in self.probed for c in self.prepared.configs)

    def next(self, ran: Mapping[str, ProbeRecord | None]) -> Unit | Stop:
        left = [c for c in self.prepared.configs if c.name not in self.probed and c.name not in ran]
        return Unit(left[0].name, left[0].index, left[0].engine, left[0].serve) if left else Stop()

    def benches(self, unit: Unit) -> list[Bench]:
        """The warm-up alone: the loads are the probes'."""
        return [b for b in boot_benches(self.spec.loads(), self.spec.warmup_requests, 1) if b.warmup]

    def then(self, unit: Unit, session: ServeSession, write: Write) -> Then | None:
        deadline = self.spec.bench_deadline_s
        return boundary_probes(session, unit.serve, self.spec, self.probe.boundary, deadline_s=deadline, write=write)

    def configs(self) -> dict[str, tuple[str, ServeConfig]]:
        return {c.name: (c.engine, c.serve) for c in self.prepared.configs}


@dataclass(frozen=True)
class ProbeJudge:
    """The probe's judge: each cell's record (the boundary its probes found), and the probe's answer."""

    kind: ProbeKind
    prepared: Prepared[CellPlan]

    def record(
        self, unit: Unit, measured: MeasuredBoot, host: HostInfo, started: datetime, wall_s: float
    ) -> ProbeRecord:
        boot, sla, spec = measured.boot, self.kind.spec.latency_sla, self.kind.boundary
        probes = probes_of(measured.benches, unit.serve, sla, spec.by)
        failed = f"boot failed: {boot.signals.status.value}: {boot.signals.reason}" if not boot.ready else None
        failed = failed or (f"warm-up failed: {measured.warmup_error}" if measured.warmup_error else None)
        found = load_boundary.boundary_of(probes, sla, spec) if failed is None and probes else None
        return ProbeRecord(
            campaign=self.kind.loaded.campaign.name,
            cell=unit.name,
            engine=unit.engine,
            serve=unit.serve,
            ok=found is not None,
            reason=failed or (found.why if found is not None else "no probe was benched"),
            boundary=found,
            benches=len(probes),
            wall_s=round(wall_s, 2),
        )

    def said(self, record: ProbeRecord) -> str:
        return record.reason

    def outcome(self, made: list[ProbeRecord], stop: Stop, wall_s: float) -> ProbeResult:
        said = "; ".join(f"{r.cell}: {r.reason}" for r in made) or "every cell named was probed before"
        return ProbeResult(
            campaign=self.kind.loaded.campaign.name,
            dry_run=False,
            probed=made,
            summary=f"probed {len(made)} cell(s) in {wall_s:.0f}s: {said}",
            next="set the campaign's concurrencies under each cell's boundary, or confirm a cell with ab_run",
        )

    def planned(self, submits: dict[str, str | None]) -> ProbeResult:
        cells = [c.model_copy(update={"submits": submits.get(c.name)}) for c in self.prepared.configs]
        b = self.kind.boundary
        return ProbeResult(
            campaign=self.kind.loaded.campaign.name,
            dry_run=True,
            planned=cells,
            summary=f"dry run: {len(cells)} boot(s), each warmed up then probed by {b.by} from {b.lowest:g} up to "
            f"{b.highest:g} ({b.most_benches} benches at most); none started",
            next=f"run it with {ACK_FLAG}=true",
        )


async def probe_run(
    path: str | Path,
    cells: list[str],
    target: Target,
    *,
    i_understand_this_submits_jobs: bool,
    dry_run: bool = False,
    boundary: BoundarySpec | None = None,
    progress: Progress | None = None,
    widening: Widenings | None = None,
    skip_known_good: bool = False,
    workspace: Path | None = None,
    versions: EngineVersions | None = None,
) -> ProbeResult:
    """Probe the campaign's cells named for their load boundary on target (`boundary`: the campaign's, else the
    defaults); fails closed without the acknowledgement; a dry run starts nothing."""
    require_ack(i_understand_this_submits_jobs, "probe_run", dry_run=dry_run)
    loaded = load_campaign(path, workspace)
    kind = ProbeKind(loaded, cells, boundary or loaded.campaign.boundary or BoundarySpec())
    opening = Opening(skip_known_good, widening, versions or EngineVersions())
    return await run_kind(kind, target, tool="probe_run", dry_run=dry_run, opening=opening, progress=progress)


__all__ = ["ProbeJudge", "ProbeKind", "Probes", "probe_run"]
