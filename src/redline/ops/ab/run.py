"""ab_run: two or more arms on one target, interleaved A B A B ..., a clean boot per arm per trial.

    result = await ab_run(workspace, spec, target, i_understand_this_submits_jobs=True)
    result.verdict.rigor        # VERDICT only when every rule held (policy/verdict.py); else DRAFT naming each

An A/B is an experiment of the one wing (ops/experiment/run.py): its plan is `Trials` (every trial in run order, one
at a time), its judge `TrialJudge` (each trial's record; the A/B's result, ops/ab/result.py). Each trial is one
measured boot: its arm booted once, warmed up, benched at every concurrency with the engine's own client (the same
prompts in every trial of every arm), stopped; trials/<arm>-<k>/trial.yml is written last, with the node it ran on
(host_info, per trial). A trial with a record is done: a re-run resumes after it, and may add trials. A known-good
entry matching the model, hardware and engine version is applied to every arm unless skip_known_good; the result
says which. The plan (a dry run) comes from ops/ab/plan.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from redline.errors import InputError, RunFailed
from redline.ledger.ab_file import AbPaths, read_spec, trial_name, write_spec
from redline.ledger.results import Results
from redline.models import BenchWorkload, ServeConfig, Widenings
from redline.models.ab import AbPlan, AbResult, AbSpec, ArmPlan, TrialPlan, TrialPoint, TrialRecord
from redline.models.context import ContextDescriptor, Node, Workload
from redline.models.load import load_of
from redline.ops.ab.accuracy import answered, ask_answers, gate_needed
from redline.ops.ab.plan import benches_of, done_of, done_trials, plan_of, wanted_arms
from redline.ops.ab.result import ab_result
from redline.ops.evidence.context import descriptor, node_of
from redline.ops.evidence.sol import sol_figure
from redline.ops.evidence.versions import EngineVersions
from redline.ops.experiment.prepare import Done, Opening, Prepared, run_kind
from redline.ops.experiment.run import Stop, Unit, Write
from redline.ops.measured_boot import BenchOutcome, MeasuredBoot, Then
from redline.ops.request_base import ACK_FLAG, require_ack
from redline.ops.session import Boot, Progress, ServeSession, executables
from redline.ops.traces import with_traces
from redline.policy.drift import kv_drift
from redline.policy.planned import Wanted
from redline.policy.sol import with_telemetry
from redline.policy.workload import WARMUP_FILE, Bench
from redline.targets import HostInfo, Target

# ---- the run -------------------------------------------------------------------------------------------------------


def check_spec(paths: AbPaths, spec: AbSpec) -> None:
    """A re-run must be the same A/B (it may add trials); another spec under this name is refused."""
    stored = read_spec(paths)
    if stored is not None and not stored.same_run(spec):
        raise InputError(
            f"an A/B named {spec.name!r} was already run with another spec ({paths.spec_file}): "
            "give this one another name, or change only its trials (to add more) or its combine"
        )


@dataclass
class Trials:
    """An A/B's plan as the wing runs it: every trial not done, in run order (A B A B ...), one at a time."""

    spec: AbSpec
    prepared: Prepared[ArmPlan]
    plan: AbPlan
    paths: AbPaths

    kind = "A/B"
    parallel = 1

    @property
    def results(self) -> Results:
        return self.paths.results

    @property
    def workspace(self) -> Path:
        return self.paths.workspace

    def arm(self, name: str) -> ArmPlan:
        return next(a for a in self.plan.arms if a.name == name)

    def trial_of(self, unit: Unit) -> TrialPlan:
        return next(s for s in self.plan.trials if trial_name(s.arm, s.trial) == unit.name)

    def todo(self) -> int:
        return sum(not s.done for s in self.plan.trials)

    def next(self, ran: Mapping[str, TrialRecord | None]) -> Unit | Stop:
        for step in self.plan.trials:
            name = trial_name(step.arm, step.trial)
            if not step.done and name not in ran:
                arm = self.arm(step.arm)
                return Unit(name, step.order, arm.engine, arm.serve)
        return Stop()

    def benches(self, unit: Unit) -> list[Bench]:
        """Every trial's benches: the same prompts in every trial of every arm."""
        return benches_of(self.spec)

    def then(self, unit: Unit, session: ServeSession, write: Write) -> Then | None:
        """The accuracy gate's ask (ops/ab/accuracy.py), where the arms differ by a lever that can change the model's
        answers, on each arm's first trial to bench in full: none of its earlier trials kept answers."""
        step = self.trial_of(unit)
        if not gate_needed({a.name: a.serve for a in self.plan.arms}, self.spec.baseline):
            return None
        if answered(self.paths, step.arm, step.trial - 1) is not None:
            return None
        return ask_answers(session, unit.serve, write)

    def configs(self) -> dict[str, tuple[str, ServeConfig]]:
        return {a.name: (a.engine, a.serve) for a in self.plan.arms}


@dataclass
class TrialJudge:
    """An A/B's judge: each trial's record (its node, boot, figures per concurrency), and the A/B's result."""

    trials: Trials
    target: str

    @property
    def prepared(self) -> Prepared[ArmPlan]:
        return self.trials.prepared

    @property
    def spec(self) -> AbSpec:
        return self.trials.spec

    def said(self, record: TrialRecord) -> str:
        return f"{'ok' if record.ok else 'failed'}: {record.reason}"

    def outcome(self, made: list[TrialRecord], stop: Stop, wall_s: float) -> AbResult:
        ran = [trial_name(r.arm, r.trial) for r in made]
        answer = ab_result(self.trials.paths.workspace, self.spec, self.trials.plan, ran=ran)
        if answer.failed is not None:  # every trial failed: its job ends failed, the answer kept
            raise RunFailed(f"{answer.failed}. Fix: {answer.next}", answer)
        return answer

    def planned(self, submits: dict[str, str | None]) -> AbResult:
        """A dry run's answer: the plan, each arm with what its boot would submit; nothing started."""
        plan, paths = self.trials.plan, self.trials.paths
        arms = [a.model_copy(update={"submits": submits.get(a.name)}) for a in plan.arms]
        return AbResult(
            ab=self.spec.name,
            path=paths.relative(paths.spec_file),
            dry_run=True,
            plan=plan.model_copy(update={"arms": arms}),
            skipped=done_trials(plan),
            known_good=plan.known_good,
            summary=f"dry run: {plan.boots} boots, each warmed up and given "
            f"{sum(len(w.points) for w in self.spec.loads())} benches; none started. {plan.known_good.note}",
            next=f"call ab_run with {ACK_FLAG}=true to run them",
        )

    def _point(self, arm: ArmPlan, boot: Boot, host: HostInfo, result: BenchOutcome) -> TrialPoint:
        workload, figures = result.bench.workload, result.figures
        context = self._context(arm, host, boot, workload, result.warm, result.bench.workload_name)
        shape, why = self.prepared.files(arm.serve.model).shape
        sol = sol_figure(context, shape, figures.output_throughput if figures is not None else None, why)
        return TrialPoint(
            workload=result.bench.workload_name,
            concurrency=workload.concurrency,
            rate=workload.rate,
            speedup=workload.speedup,
            num_prompts=workload.num_prompts,
            ok=result.problem is None,
            problem=result.problem,
            result_file=result.bench.result_name if result.run.result_text is not None else None,
            figures=figures,
            healthy_after=result.run.healthy_after,
            client=result.run.client,
            checks=result.checks,
            telemetry=result.telemetry,
            context=context,
            sol=with_telemetry(sol, result.telemetry),
        )

    def _version(self, arm: ArmPlan, boot: Boot) -> str | None:
        """The engine's version: as its boot log says, else as the target answered (known-good's identify)."""
        return boot.signals.engine_version or self.prepared.version(arm.engine)

    def _context(
        self, arm: ArmPlan, host: HostInfo, boot: Boot, workload: BenchWorkload, warm: bool, name: str | None
    ) -> ContextDescriptor:
        w = Workload.of(workload, name)
        if workload.dataset == "trace":  # the trace it replays, as a figure's context names it
            w = w.model_copy(update={"trace": self.spec.shape(name).trace_id})
        serve = arm.serve
        return descriptor(
            serve,
            files=self.prepared.files(serve.model),
            host=host,
            engine=arm.engine,
            engine_version=self._version(arm, boot),
            workload=w,
            warmup_requests=self.spec.warmup_requests,
            warm=warm,
            trials=1,
            bench_backend=arm.bench_backend,
            baseline=self.spec.baseline,
            compile_cache=boot.signals.compile_cache,
        )

    def record(
        self, unit: Unit, measured: MeasuredBoot, host: HostInfo, started: datetime, wall_s: float
    ) -> TrialRecord:
        step = self.trials.trial_of(unit)
        arm, boot = self.trials.arm(step.arm), measured.boot
        points = [self._point(arm, boot, host, r) for r in measured.benches]
        ok, reason = _judge(measured, points, sum(len(w.points) for w in self.spec.loads()))
        warmup = measured.command(WARMUP_FILE)
        commands = {
            "boot": arm.boot_command,
            **({"warmup": warmup} if warmup is not None and measured.warmup_error is None else {}),
            "bench": [r.run.argv for r in measured.benches],
        }
        return TrialRecord(
            ab=self.spec.name,
            arm=step.arm,
            trial=step.trial,
            order=step.order,
            ok=ok,
            reason=reason,
            target=self.target,
            node=node_of(host) or Node(),
            engine=arm.engine,
            engine_version=self._version(arm, boot),
            serve=arm.serve,
            boot_status=boot.signals.status,
            boot_reason=boot.signals.reason,
            boot_s=round(boot.boot_s, 2),
            model_load=boot.signals.model_load,
            compile_cache=boot.signals.compile_cache,
            drift=kv_drift(arm.predicted, boot.signals),
            warm=warmup is not None and measured.warmup_error is None,
            warmup_error=measured.warmup_error,
            points=points,
            commands=commands,
            started_at=started,
            ended_at=datetime.now(UTC),
            wall_s=round(wall_s, 2),
        )


def _judge(measured: MeasuredBoot, points: list[TrialPoint], benches: int) -> tuple[bool, str]:
    boot = measured.boot
    if not boot.ready:
        return False, f"boot failed: {boot.signals.status.value}: {boot.signals.reason}"
    if measured.warmup_error is not None:
        return False, f"warm-up failed: {measured.warmup_error}"
    bad = next((p for p in points if not p.ok), None)
    if bad is not None:
        at = f"concurrency {bad.concurrency}" if bad.concurrency is not None else load_of(bad).label
        return False, (f"{bad.workload}, " if bad.workload else "") + f"{at}: {bad.problem}"
    if len(points) < benches:
        return False, "not every concurrency was benched"
    return True, f"every request completed at every concurrency ({boot.signals.status.value})"


@dataclass(frozen=True)
class AbKind:
    """An A/B as the wing opens it (ops/experiment/prepare.py): its arms (inline, or a campaign's cells) made by its
    rules, its plan `Trials` and its judge `TrialJudge` over them once prepared. Two arms alike as given may both
    run (an A/A); another spec under its name is refused; a run writes its spec."""

    workspace: Path
    spec: AbSpec

    word, what, alike, record = "A/B", "arm", True, "record"
    again = "or give the A/B another name"
    model_fix = "fix the arm's model (its serve config, or its campaign cell's)"

    @property
    def paths(self) -> AbPaths:
        return AbPaths(self.workspace, self.spec.name)

    @property
    def results(self) -> Results:
        return self.paths.results

    def wanted(self, target: Target | None) -> list[Wanted[ArmPlan]]:
        return wanted_arms(self.workspace, self.spec, executables(target) if target is not None else None)

    def check(self, target: Target) -> None:
        check_spec(self.paths, self.spec)

    def done(self, prepared: Prepared[ArmPlan]) -> list[Done]:
        return done_of(self.paths, self.spec, prepared)

    def opened(self, prepared: Prepared[ArmPlan], target: Target, dry_run: bool) -> tuple[Trials, TrialJudge]:
        plan = plan_of(self.spec, prepared, self.paths, target)
        if not dry_run:
            write_spec(self.paths, self.spec)
        trials = Trials(self.spec, prepared, plan, self.paths)
        return trials, TrialJudge(trials, target.name)


async def ab_run(
    workspace: Path,
    spec: AbSpec,
    target: Target,
    *,
    i_understand_this_submits_jobs: bool,
    dry_run: bool = False,
    skip_known_good: bool = False,
    progress: Progress | None = None,
    widening: Widenings | None = None,
    versions: EngineVersions | None = None,
) -> AbResult:
    """Run the A/B on target (the spec's); fails closed without the acknowledgement; a dry run starts nothing.
    `widening`: the server config's, per engine (each arm is admitted with its engine's). `versions`: the engine
    versions the session knows (asked once per target per server); none: asked."""
    require_ack(i_understand_this_submits_jobs, "ab_run", dry_run=dry_run)
    opening = Opening(skip_known_good, widening, versions or EngineVersions())
    kind = AbKind(workspace, with_traces(spec, AbPaths(workspace, spec.name).spec_file, workspace))  # ../traces/..
    return await run_kind(kind, target, tool="ab_run", dry_run=dry_run, opening=opening, progress=progress)


__all__ = ["AbKind", "TrialJudge", "Trials", "ab_run", "check_spec"]
