"""ab_run: two or more arms on one target, interleaved A B A B ..., a clean boot per arm per trial.

    result = await ab_run(workspace, spec, target, i_understand_this_submits_jobs=True)
    result.verdict.rigor        # VERDICT only when every rule held (policy/verdict.py); else DRAFT naming each

Each trial is one measured boot (ops/measured_boot.py): it boots its arm once through ServeSession, warms it
up, benches it at every concurrency with the engine's own client (the same prompts in every trial of every arm),
stops it, and writes trials/<arm>-<k>/trial.yml last, with the node it ran on (host_info, per
trial). The running trial's server is recorded in ab/<name>/server.json before its boot is
waited on, so a killed runner leaves a record the next run stops it by; a cancelled run stops
it at once. A trial with a record is done: a re-run resumes after it, and may add trials.
A known-good entry matching the model, hardware and engine version is applied to every arm
unless skip_known_good; the result says which. The plan (a dry run) comes from ops/ab/plan.py, the result,
read from the trial files, from ops/ab/result.py.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.ab_file import AbPaths, read_spec, write_spec, write_trial, write_trial_file
from redline.models import BenchWorkload, Widenings
from redline.models.ab import AbPlan, AbResult, AbSpec, ArmPlan, TrialPoint, TrialRecord, TrialStep
from redline.models.context import ContextDescriptor, Node, Workload
from redline.ops.ab.accuracy import answered, ask_answers, gate_needed
from redline.ops.ab.plan import Prepared, check_resumable, done_trials, plan_of, prepare, steps_of
from redline.ops.ab.result import ab_result
from redline.ops.evidence.context import descriptor, node_of
from redline.ops.evidence.sol import sol_figure
from redline.ops.evidence.versions import EngineVersions
from redline.ops.measured_boot import Keep, MeasuredBoot, StepResult, Then, measured_boot, stop_left_servers
from redline.ops.request_base import ACK_FLAG, require_ack
from redline.ops.session import Boot, Progress, ServeSession, say
from redline.policy.drift import kv_drift
from redline.policy.sol import with_telemetry
from redline.policy.workload import RUN_DIR, WARMUP_FILE, Step
from redline.targets import HostInfo, Target
from redline.targets.unit import boot_unit

# ---- the run -------------------------------------------------------------------------------------------------------


def check_spec(paths: AbPaths, spec: AbSpec) -> None:
    """A re-run must be the same A/B (it may add trials); another spec under this name is refused."""
    stored = read_spec(paths)
    if stored is not None and not stored.same_run(spec):
        raise InputError(
            f"an A/B named {spec.name!r} was already run with another spec ({paths.spec_file}): "
            "give this one another name, or change only its trials (to add more) or its combine"
        )


@asynccontextmanager
async def runner_lock(paths: AbPaths) -> AsyncIterator[None]:
    """One runner per A/B; the OS drops the lock of a runner that is killed."""
    lock = FileLock(str(paths.checked(paths.lock_file, create=True)), timeout=0)  # real folders, a plain lock
    try:
        lock.acquire()
    except Timeout as exc:
        raise InputError(
            f"another ab_run is running this A/B ({paths.lock_file} is held): wait for it or cancel its job"
        ) from exc
    try:
        yield
    finally:
        lock.release()


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
    `versions`: the engine versions the session knows (a dry run reuses them, a run asks again); none: asked."""
    paths = AbPaths(workspace, spec.name)
    _check_target(spec, target, i_understand_this_submits_jobs or dry_run)
    check_spec(paths, spec)
    target.dry_run, known = dry_run, versions or EngineVersions()
    prepared = await prepare(
        workspace,
        spec,
        target,
        skip_known_good=skip_known_good,
        widening=widening,
        versions=known if dry_run else known.fresh(),  # a run asks again: the engine may have changed since
        progress=progress if dry_run else None,
    )
    plan = plan_of(prepared, paths, target)
    target.experiment = spec.name  # a target that labels its servers (kubernetes) files them under the A/B
    if dry_run:
        return await _dry_run(spec, paths, plan, target, progress)
    check_resumable(paths, plan)
    write_spec(paths, spec)
    async with runner_lock(paths):
        if await stop_left_servers([paths.server_file], target, "trial", paths.workspace):
            await say(progress, 0.0, "stopped the server a killed run left behind")
        sessions = {e: ServeSession(target, get_engine(e), None, (widening or {}).get(e)) for e in prepared.engines}
        runner = Runner(prepared, plan, paths, target, sessions, progress)
        ran = await runner.run()
    return ab_result(workspace, prepared, plan, ran=ran)


def _check_target(spec: AbSpec, target: Target, ack: bool) -> None:
    """An A/B runs on the target its spec names; a run needs the acknowledgement (a dry run does not)."""
    if target.name != spec.target:
        raise InputError(
            f"the A/B runs on target {spec.target!r}, not {target.name!r}: run it there, or change its target"
        )
    require_ack(ack, "ab_run")


async def _dry_run(spec: AbSpec, paths: AbPaths, plan: AbPlan, target: Target, progress: Progress | None) -> AbResult:
    """A dry run's answer: the plan, each arm with what its boot would submit; nothing started."""
    arms = [a.model_copy(update={"submits": await _submits(target, a)}) for a in plan.arms]
    await say(progress, 1.0, f"planned {plan.boots} boots; none started")
    return AbResult(
        ab=spec.name,
        path=paths.relative(paths.spec_file),
        dry_run=True,
        plan=plan.model_copy(update={"arms": arms}),
        skipped=done_trials(plan),
        known_good=plan.known_good,
        summary=f"dry run: {plan.boots} boots, each warmed up and benched at "
        f"{len(spec.concurrencies)} concurrencies; none started. {plan.known_good.note}",
        next=f"call ab_run with {ACK_FLAG}=true to run them",
    )


@dataclass
class Runner:
    """One run of an A/B: its trials in order, each a clean boot on the one target by its arm's engine."""

    prepared: Prepared
    plan: AbPlan
    paths: AbPaths
    target: Target
    sessions: dict[str, ServeSession]  # one per engine the arms boot
    progress: Progress | None
    t0: float = field(default_factory=time.monotonic)

    @property
    def spec(self) -> AbSpec:
        return self.prepared.spec

    @property
    def steps(self) -> list[Step]:
        """Every trial's benches: the same prompts in every trial of every arm."""
        return steps_of(self.spec)

    async def run(self) -> list[str]:
        arms = {a.name: a for a in self.plan.arms}
        todo = [s for s in self.plan.steps if not s.done]
        ran = []
        for i, step in enumerate(todo):
            await self.run_trial(step, arms[step.arm], self._progress(step, i, len(todo)))
            ran.append(f"{step.arm}-{step.trial}")
        return ran

    def _progress(self, step: TrialStep, i: int, n: int) -> Progress:
        async def report(fraction: float, text: str) -> None:
            await say(
                self.progress,
                (i + fraction) / n,
                f"trial {i + 1} of {n} ({step.arm}-{step.trial}), {time.monotonic() - self.t0:.0f}s elapsed: {text}",
            )

        return report

    async def run_trial(self, step: TrialStep, arm: ArmPlan, progress: Progress) -> TrialRecord:
        """Boot the arm, measure it, stop it, record the trial; the server is stopped whatever happens."""
        started, t0 = datetime.now(UTC), time.monotonic()
        session = self.sessions[arm.engine]
        session.progress = progress
        host = await self.target.host_info()  # the node, per trial: a trial on another node must show

        def write(name: str, text: str) -> None:
            write_trial_file(self.paths, step.arm, step.trial, name, text)

        boot_unit(f"trial-{step.arm}-{step.trial}")  # a target that names its jobs (slurm) says which trial
        measured = await measured_boot(
            session,
            arm.serve,
            self.steps,
            keep=Keep(self.paths.server_file, step.order, write, base=self.paths.workspace),
            boot_deadline_s=self.spec.boot_deadline_s,
            bench_deadline_s=self.spec.bench_deadline_s,
            then=self._ask(step, arm, session, write),
        )
        trial = self._record(step, arm, measured, host, started, time.monotonic() - t0)
        write("boot.log", measured.log_text)
        write_trial(self.paths, trial)  # last: its presence means the trial is done
        await progress(1.0, f"{'ok' if trial.ok else 'failed'}: {trial.reason}")
        return trial

    def _ask(
        self, step: TrialStep, arm: ArmPlan, session: ServeSession, write: Callable[[str, str], object]
    ) -> Then | None:
        """The accuracy gate's ask (ops/ab/accuracy.py), where the arms differ by a lever that can change the model's
        answers, on each arm's first trial to bench in full: none of its earlier trials kept answers."""
        if not gate_needed({a.name: a.serve for a in self.plan.arms}, self.spec.baseline):
            return None
        if answered(self.paths, step.arm, step.trial - 1) is not None:
            return None
        return ask_answers(session, arm.serve, write)

    def _point(self, arm: ArmPlan, boot: Boot, host: HostInfo, result: StepResult) -> TrialPoint:
        workload, figures = result.step.workload, result.figures
        context = self._context(arm, host, boot, workload, result.warm, result.step.workload_name)
        shape, why = self.prepared.files[arm.serve.model].shape
        sol = sol_figure(context, shape, figures.output_throughput if figures is not None else None, why)
        return TrialPoint(
            workload=result.step.workload_name,
            concurrency=workload.concurrency,
            num_prompts=workload.num_prompts,
            ok=result.problem is None,
            problem=result.problem,
            result_file=result.step.result_name if result.run.result_text is not None else None,
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
        return boot.signals.engine_version or self.prepared.identities[arm.engine].engine_version

    def _context(
        self, arm: ArmPlan, host: HostInfo, boot: Boot, workload: BenchWorkload, warm: bool, name: str | None
    ) -> ContextDescriptor:
        w = Workload.of(workload, name)
        serve = arm.serve
        bench = get_engine(arm.engine).bench_argv(serve, workload, result_dir=RUN_DIR, result_filename="x.json")
        backend = bench[bench.index("--backend") + 1] if "--backend" in bench else None
        return descriptor(
            serve,
            files=self.prepared.files[serve.model],
            host=host,
            engine=arm.engine,
            engine_version=self._version(arm, boot),
            workload=w,
            warmup_requests=self.spec.warmup_requests,
            warm=warm,
            trials=1,
            bench_backend=backend,
            baseline=self.spec.baseline,
        )

    def _record(
        self, step: TrialStep, arm: ArmPlan, measured: MeasuredBoot, host: HostInfo, started: datetime, wall_s: float
    ) -> TrialRecord:
        boot = measured.boot
        points = [self._point(arm, boot, host, r) for r in measured.benches]
        ok, reason = _judge(measured, points, len(self.spec.concurrencies) * len(self.spec.shapes()))
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
            target=self.target.name,
            node=node_of(host) or Node(),
            engine=arm.engine,
            engine_version=self._version(arm, boot),
            serve=arm.serve,
            boot_status=boot.signals.status,
            boot_reason=boot.signals.reason,
            boot_s=round(boot.boot_s, 2),
            model_load=boot.signals.model_load,
            drift=kv_drift(arm.predicted, boot.signals),
            warm=warmup is not None and measured.warmup_error is None,
            warmup_error=measured.warmup_error,
            points=points,
            commands=commands,
            started_at=started,
            ended_at=datetime.now(UTC),
            wall_s=round(wall_s, 2),
        )


async def _submits(target: Target, arm: ArmPlan) -> str | None:
    return await ServeSession(target, get_engine(arm.engine)).submission_preview(arm.serve)


def _judge(measured: MeasuredBoot, points: list[TrialPoint], benches: int) -> tuple[bool, str]:
    boot = measured.boot
    if not boot.ready:
        return False, f"boot failed: {boot.signals.status.value}: {boot.signals.reason}"
    if measured.warmup_error is not None:
        return False, f"warm-up failed: {measured.warmup_error}"
    bad = next((p for p in points if not p.ok), None)
    if bad is not None:
        return False, (f"{bad.workload}, " if bad.workload else "") + f"concurrency {bad.concurrency}: {bad.problem}"
    if len(points) < benches:
        return False, "not every concurrency was benched"
    return True, f"every request completed at every concurrency ({boot.signals.status.value})"


__all__ = ["ab_run", "check_spec"]
