"""A cell's verdict from what its boot and benches gave: the figures per concurrency, the context, green or red.

The experiment wing (ops/experiment/run.py) boots and benches the cell (ops/measured_boot.py) and writes what this
judge makes of it; this only reads what the boot left (no I/O), and policy/champion.py holds the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from redline.ledger.campaign_file import boot_of
from redline.models import ServeConfig
from redline.models.boot import CompileCache
from redline.models.campaign import Campaign, Verdict
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import (
    BootRecord,
    CampaignRunResult,
    CellVerdict,
    Commands,
    ConcurrencyResult,
    Repeat,
)
from redline.models.context import ContextDescriptor, Workload
from redline.models.load_boundary import LoadBoundary
from redline.models.workloads import Load, load_of
from redline.ops.campaign.outcome import ended, planned_result, run_result
from redline.ops.campaign_read import Loaded
from redline.ops.evidence.context import ModelFiles, descriptor
from redline.ops.experiment.run import Stop, Unit
from redline.ops.measured_boot import MeasuredBoot
from redline.policy import champion as champions
from redline.policy import clean_bench, load_boundary
from redline.policy.drift import kv_drift
from redline.policy.figures import metrics_of, summarize
from redline.policy.workload import WARMUP_FILE, prompts_at
from redline.targets import HostInfo


@dataclass(frozen=True)
class CellJudge:
    """A campaign's judge in the experiment wing: each cell's verdict from what its measured boot gave, and the run's
    answer. What every verdict of one run shares: the campaign, its plan, each engine's version there, the model's
    files."""

    loaded: Loaded
    plan: CampaignPlan
    versions: Mapping[str, str | None]
    files: Mapping[str, ModelFiles]  # each model's config.json as the target has it: its hash, quantization

    @property
    def campaign(self) -> Campaign:
        return self.loaded.campaign

    def record(
        self, unit: Unit, measured: MeasuredBoot, host: HostInfo, started: datetime, wall_s: float
    ) -> CellVerdict:
        name, replicate = boot_of(unit.name)
        cell = next(c for c in self.plan.cells if c.name == name)
        verdict = self.verdict(cell, measured, host, started, wall_s)
        return verdict.model_copy(update={"replicate": replicate})

    def said(self, record: CellVerdict) -> str:
        boot = f" (boot {record.replicate}, a replicate)" if record.replicate > 1 else ""
        return f"{record.verdict}{boot}: {record.reason}"

    def outcome(self, made: list[CellVerdict], stop: Stop, wall_s: float) -> CampaignRunResult:
        return ended(self.loaded, run_result(self.loaded, self.plan, made, stop, wall_s))  # every cell flagged: failed

    def planned(self, submits: dict[str, str | None]) -> CampaignRunResult:
        cells = [c.model_copy(update={"submits": submits.get(c.name)}) for c in self.plan.cells]
        return planned_result(self.loaded, self.plan.model_copy(update={"cells": cells}))

    def result_at(
        self, cell: CellPlan, point: Load | int, trials: list[Repeat], workload: str | None = None
    ) -> ConcurrencyResult:
        at = point if isinstance(point, Load) else Load(concurrency=point)
        shape = self.campaign.shape(workload)
        n = len(shape.replayed.rows) if shape.dataset == "trace" else prompts_at(shape.num_prompts, at)[0]
        where = {"workload": workload, "concurrency": at.concurrency, "rate": at.rate, "speedup": at.speedup}
        if not trials:
            why = "not run: an earlier bench left the server unable to answer"
            return ConcurrencyResult(**where, num_prompts=n, ok=False, sla_ok=False, reason=why)
        per_trial = [metrics_of(t.figures, cell.serve) for t in trials if t.figures is not None]
        metrics = summarize(per_trial) if per_trial else {}
        sla = champions.sla_checks(metrics, self.campaign.sla)
        problems = [p for t in trials if (p := repeat_problem(t)) is not None]
        return ConcurrencyResult(
            **where,
            num_prompts=n,
            ok=not problems,
            reason=problems[0] if problems else None,
            metrics=metrics,
            sla=sla,
            sla_ok=all(s.ok for s in sla),
            repeats=trials,
        )

    def results(self, cell: CellPlan, measured: MeasuredBoot) -> list[ConcurrencyResult]:
        """Every workload's load points' figures over their trials (the listed concurrencies and rates, then any the
        load boundary probed); none where the boot or the warm-up failed."""
        if not measured.boot.ready or measured.warmup_error is not None:
            return []
        trials = repeats_of(measured)
        results = []
        for name, _ in self.campaign.shapes():
            points = {*self.campaign.points_of(name), *(p for w, p in trials if w == name)}
            benched = sorted(points, key=lambda p: p.order)
            results += [self.result_at(cell, p, trials.get((name, p), []), name) for p in benched]
        return results

    def boundary(self, cell: CellPlan, results: list[ConcurrencyResult]) -> LoadBoundary | None:
        """The load boundary the cell's trials say (campaign boundary:); None without one, or with no bench."""
        spec, sla = self.campaign.boundary, self.campaign.latency_sla
        if spec is None or not results:
            return None
        probes = [  # a trial with a problem measured nothing usable: it did not hold (as the probing counted it)
            boundary_probe(at, t, cell.serve, sla)
            for r in results
            if (at := r.rate if spec.by == "rate" else r.concurrency) is not None
            for t in r.repeats
        ]
        return load_boundary.boundary_of(probes, sla, spec)

    def judged(
        self, cell: CellPlan, measured: MeasuredBoot, results: list[ConcurrencyResult]
    ) -> tuple[Verdict, str, LoadBoundary | None]:
        """Green or red with its reason (policy/champion.py), and the load boundary the trials say."""
        boot = measured.boot
        verdict, reason = champions.cell_verdict(
            self.campaign,
            boot_ok=boot.ready,
            boot_reason=f"{boot.signals.status.value}: {boot.signals.reason}",
            warmup_error=measured.warmup_error,
            results=results,
        )
        boundary = self.boundary(cell, results)
        return verdict, reason + (f"; load boundary: {boundary.why}" if boundary else ""), boundary

    def verdict(
        self, cell: CellPlan, measured: MeasuredBoot, host: HostInfo | None, started: datetime, wall_s: float
    ) -> CellVerdict:
        boot, results = measured.boot, self.results(cell, measured)
        verdict, reason, boundary = self.judged(cell, measured, results)
        signals = boot.signals
        return CellVerdict(
            campaign=self.campaign.name,
            cell=cell.name,
            index=cell.index,
            baseline=cell.baseline,
            levers=cell.levers,
            verdict=verdict,
            reason=reason,
            gates=cell.gates,
            widened=list(boot.widened),
            boot=BootRecord(
                status=signals.status,
                reason=signals.reason,
                boot_s=round(boot.boot_s, 2),
                log_file="boot.log",
                signals=signals,
            ),
            predicted=cell.predicted,
            drift=kv_drift(cell.predicted, signals),
            results=results,
            workloads={name: Workload.of(w, name) for name, w in self.campaign.shapes() if name is not None},
            boundary=boundary,
            commands=Commands(
                boot=cell.boot_command,
                warmup=measured.command(WARMUP_FILE),
                bench=[r.run.argv for r in measured.benches],
            ),
            context=self.context(
                cell, signals.engine_version or self.versions.get(cell.engine), host, signals.compile_cache
            ),
            started_at=started,
            ended_at=datetime.now(UTC),
            wall_s=round(wall_s, 2),
        )

    def context(
        self,
        cell: CellPlan,
        engine_version: str | None,
        host: HostInfo | None,
        compile_cache: CompileCache | None = None,
    ) -> ContextDescriptor:
        """The cell's context, built as every measured number's is (ops/evidence/context.py), with the torch.compile
        cache its boot found."""
        shapes = self.campaign.shapes()
        workload = Workload.of(shapes[0][1]) if len(shapes) == 1 else Workload()  # several: each figure says its own
        return descriptor(
            cell.serve,
            files=self.files.get(cell.serve.model, ModelFiles(None, None, "not read")),
            host=host,
            engine=cell.engine,
            engine_version=engine_version,
            workload=workload,
            warmup_requests=self.campaign.warmup_requests,
            trials=self.campaign.repeats,
            bench_backend=cell.bench_backend,
            compile_cache=compile_cache,
        )


def repeats_of(measured: MeasuredBoot) -> dict[tuple[str | None, Load], list[Repeat]]:
    """The benches a cell's boot ran, as repeats by workload and load point."""
    repeats: dict[tuple[str | None, Load], list[Repeat]] = {}
    for r in measured.benches:
        lines = [*r.run.log_lines, *([r.unreadable] if r.unreadable else [])]
        repeat = Repeat(
            repeat=r.bench.repeat,
            warm=r.warm,
            result_file=r.bench.result_name if r.run.result_text is not None else None,
            figures=r.figures,
            server_healthy_after=r.run.healthy_after,
            exit_code=r.run.run.returncode,
            client=r.run.client,
            checks=r.checks,
            telemetry=r.telemetry,
            log_lines=lines[-50:],
        )
        repeats.setdefault((r.bench.workload_name, load_of(r.bench.workload)), []).append(repeat)
    return repeats


def _usable(repeat: Repeat, serve: ServeConfig) -> dict[str, float] | None:
    """A repeat's metrics, or None where it has a problem."""
    return metrics_of(repeat.figures, serve) if repeat.figures is not None and repeat_problem(repeat) is None else None


def boundary_probe(at: float, repeat: Repeat, serve: ServeConfig, sla: dict[str, float]) -> load_boundary.Probe:
    """A repeat as a probe of the load boundary: not judged where its client could not send the rate asked."""
    unjudged = next((c.said for c in repeat.checks if c.check == "rate" and not c.ok), None)
    return load_boundary.probe(at, _usable(repeat, serve), sla, unjudged)


def repeat_problem(repeat: Repeat) -> str | None:
    if repeat.figures is None:
        why = repeat.log_lines[-1] if repeat.log_lines else f"the bench exited {repeat.exit_code}"
        return f"repeat {repeat.repeat}: no result ({why})"
    if not repeat.figures.all_completed:
        f = repeat.figures
        return f"repeat {repeat.repeat}: {f.failed} of {f.num_prompts} requests failed (completed {f.completed})"
    if not repeat.server_healthy_after:
        return f"repeat {repeat.repeat}: the server did not answer its health check after the bench"
    flag = clean_bench.flagged(repeat.checks)
    return f"repeat {repeat.repeat}: {flag}" if flag is not None else None


__all__ = ["CellJudge", "boundary_probe", "repeat_problem", "repeats_of"]
