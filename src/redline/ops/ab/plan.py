"""What an A/B will do, without booting anything: its arms as they boot, and its plan (the dry run).

    prepared = await prepare_arms(workspace, spec, target, skip_known_good=False, widening=None)
    plan = plan_of(prepared, paths, target)   # every trial in run order, with its commands

The arms resolve to the engines and serve configs they boot (inline, or a campaign's cell), with the known-good
entry applied and each arm gated and admitted; arms of two engines are benched by the one client and must match
in prefix caching (policy/cross_engine.py). What the trials gave is ops/ab/result.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.ab_file import AbPaths, read_trial
from redline.models import ServeConfig, Widenings
from redline.models.ab import AbPlan, AbSpec, ArmPlan, ArmSpec, TrialPlan
from redline.models.campaign import Campaign, CellSpec
from redline.models.known_good import KnownGoodUse
from redline.ops.campaign.load import load_named
from redline.ops.campaign.predictions import engine_observations, infeasible_gates, predicted_for
from redline.ops.evidence.context import ModelFiles, model_files
from redline.ops.evidence.known_good_apply import Identity, found_for, identify, registry_path
from redline.ops.evidence.versions import EngineVersions
from redline.ops.session import Progress, executables
from redline.policy import ab as plans
from redline.policy import known_good as kg
from redline.policy.campaign import cell_config, cell_engine  # the campaign's own rules make a cell's config
from redline.policy.cross_engine import engines_of, one_bench_client, refuse_unmatched_caching
from redline.policy.workload import Bench, boot_benches, commands_of, prompt_gates
from redline.targets import Target

# ---- the arms and the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedArm:
    """An arm's engine and serve config as its spec gives it, before the known-good entry: inline, or a campaign
    cell's (`cell`: its campaign, base and levers, whose gates come after the entry, as in the campaign)."""

    engine: str
    config: ServeConfig  # what the arm boots without an entry (a cell's after the campaign's gates)
    cell: tuple[Campaign, ServeConfig, CellSpec] | None = None

    @property
    def seqs_origin(self) -> tuple[bool, str]:
        """Whether the arm (or its cell) set max_num_seqs itself, so a value below the A/B's top concurrency is
        refused; and where it came from otherwise, so the gate says what it raised (policy/workload.py seqs_gate)."""
        if self.cell is None:
            return self.config.max_num_seqs is not None, "the known-good entry"
        campaign, _, cell = self.cell
        return "max_num_seqs" in cell.set(), f"cell {cell.name!r} of campaign {campaign.name!r}"

    def applied(self, found: kg.Found) -> tuple[ServeConfig, KnownGoodUse]:
        """The config with the entry found applied (a knob the arm or its cell set wins), and what was done."""
        if self.cell is None:
            return kg.use_entry(self.config, found)
        made = cell_config(*self.cell, found)
        return made.config, made.use or KnownGoodUse(applied=False, note=found.note)


def resolve_arm(workspace: Path, arm: ArmSpec, engine: str) -> ResolvedArm:
    """The arm's engine and serve config: inline (its engine, else `engine`, the A/B's), or the named cell of a
    campaign in the workspace (the cell's engine, and its config by the campaign's rules)."""
    if arm.serve is not None:
        return ResolvedArm(arm.engine or engine, arm.serve)
    loaded = load_named(workspace, str(arm.campaign), f"arm {arm.name}: campaign")
    cell = next((c for c in loaded.cells if c.name == arm.cell), None)
    if cell is None:
        raise InputError(
            f"arm {arm.name!r}: campaign {arm.campaign} has no cell {arm.cell!r}; its cells are "
            f"{', '.join(loaded.names)}"
        )
    booted = cell_engine(loaded.campaign, cell)
    if arm.engine is not None and arm.engine != booted:
        raise InputError(
            f"arm {arm.name!r}: engine {arm.engine!r}, but cell {arm.cell!r} of {arm.campaign} boots {booted!r}: "
            "leave engine out (the cell's is used) or give the arm's serve config inline"
        )
    made = cell_config(loaded.campaign, loaded.base, cell)
    return ResolvedArm(booted, made.config, (loaded.campaign, loaded.base, cell))


@dataclass
class Prepared:
    """What a run (or a dry run) knows before it boots: the arms as they will boot, the target's identity per engine
    (its GPU, and each engine's version there)."""

    spec: AbSpec
    arms: list[ArmPlan]
    known_good: KnownGoodUse
    identities: dict[str, Identity]
    files: dict[str, ModelFiles]

    @property
    def engines(self) -> list[str]:
        return list(self.identities)


def _combined(uses: dict[str, KnownGoodUse]) -> KnownGoodUse:
    """One account of what the registry did for every arm."""
    notes = {u.note for u in uses.values()}
    first = next(iter(uses.values()))
    note = first.note if len(notes) == 1 else "; ".join(f"arm {a}: {u.note}" for a, u in uses.items())
    entry = next((u.entry for u in uses.values() if u.entry is not None), None)
    added = sorted({f"{a}: {x}" if len(notes) > 1 else x for a, u in uses.items() for x in u.added})
    kept = sorted({f"{a}: {x}" if len(notes) > 1 else x for a, u in uses.items() for x in u.kept})
    return KnownGoodUse(applied=any(u.applied for u in uses.values()), entry=entry, added=added, kept=kept, note=note)


def _arm_plan(
    spec: AbSpec, name: str, arm: ResolvedArm, config: ServeConfig, target: Target, widening: Widenings | None
) -> ArmPlan:
    """One arm as it boots: its config (`config`: with the known-good entry) after the methodology gates, admitted by
    its engine (and its widening)."""
    engine_name = arm.engine
    engine = get_engine(engine_name)
    own, source = arm.seqs_origin
    try:
        config, gates = plans.gate_arm(spec, name, config, own=own, source=source)
        engine.admit(config, (widening or {}).get(engine_name))
        boot = commands_of(engine, config, benches_of(spec), executables(target)).boot
    except (ValueError, InputError) as exc:
        raise InputError(f"arm {name!r}: {exc}" if not str(exc).startswith("arm ") else str(exc)) from exc
    return ArmPlan(
        name=name, baseline=name == spec.baseline, engine=engine_name, serve=config, gates=gates, boot_command=boot
    )


def _predicted(
    workspace: Path, spec: AbSpec, arms: list[ArmPlan], files: dict[str, ModelFiles], identities: dict[str, Identity]
) -> list[ArmPlan]:
    """Each arm with its KV cache predicted on the target's GPU against the workload (as a campaign's cells)."""
    needed = spec.kv_need
    seen = {e: engine_observations(e, workspace) for e in identities}
    return [
        a.model_copy(
            update={
                "predicted": predicted_for(
                    a.engine, a.serve, files[a.name].shape[0], identities[a.engine], seen[a.engine], needed
                )
            }
        )
        for a in arms
    ]


async def prepare_arms(
    workspace: Path,
    spec: AbSpec,
    target: Target,
    *,
    skip_known_good: bool,
    widening: Widenings | None,
    versions: EngineVersions | None = None,
    progress: Progress | None = None,
) -> Prepared:
    """Resolve every arm, ask the target what it is (each engine's version from `versions` when it holds it),
    apply the known-good entry (a knob an arm set wins; arms it would make one config are refused), gate and admit
    each arm (each by its engine, with its engine's widening); arms of two engines must be benched by one client,
    caching matched."""
    resolved = {arm.name: resolve_arm(workspace, arm, spec.engine) for arm in spec.arms}
    engines = dict.fromkeys(r.engine for r in resolved.values())
    identities = {e: await identify(target, get_engine(e), versions, progress) for e in engines}
    files = {m: await model_files(target, m) for m in dict.fromkeys(r.config.model for r in resolved.values())}
    applied, uses = {}, {}
    for name, r in resolved.items():
        hash_ = files[r.config.model].config_hash
        found = found_for(
            registry_path(workspace), r.config.model, hash_, identities[r.engine], r.engine, skip=skip_known_good
        )
        applied[name], uses[name] = r.applied(found)
    plans.refuse_arms_made_one([(n, r.engine, r.config, applied[n]) for n, r in resolved.items()], uses)
    arms = [_arm_plan(spec, n, r, applied[n], target, widening) for n, r in resolved.items()]
    arms = _predicted(workspace, spec, arms, {n: files[r.config.model] for n, r in resolved.items()}, identities)
    runs = [(a.name, a.engine, a.serve) for a in arms]
    one_bench_client("arm", runs)
    refuse_unmatched_caching("arm", runs)
    return Prepared(spec, arms, _combined(uses), identities, files)


def benches_of(spec: AbSpec) -> list[Bench]:
    """What every trial's server runs: the warm-up, then each concurrency (policy/workload.py, as a campaign's)."""
    return boot_benches(spec.loads(), spec.warmup_requests, repeats=1)


def plan_of(prepared: Prepared, paths: AbPaths, target: Target) -> AbPlan:
    """Every trial in run order with its commands; a trial with a record is marked done."""
    spec = prepared.spec
    exes, steps = executables(target), benches_of(spec)
    commands = {a.name: commands_of(get_engine(a.engine), a.serve, steps, exes) for a in prepared.arms}
    trials = [
        TrialPlan(
            order=order,
            arm=arm,
            trial=k,
            folder=paths.relative(paths.trial_dir(arm, k)),
            boot_command=commands[arm].boot,
            warmup_command=commands[arm].warmup,
            bench_commands=[argv for _, argv in commands[arm].benches],
            done=(paths.trial_dir(arm, k) / "trial.yml").exists(),
        )
        for order, arm, k in plans.run_order(spec)
    ]
    return AbPlan(
        ab=spec.name,
        target=spec.target,
        engine=spec.engine,
        engines=engines_of([(a.name, a.engine, a.serve) for a in prepared.arms]),
        arms=prepared.arms,
        trials=trials,
        boots=sum(not s.done for s in trials),
        gates=[*prompt_gates(spec.loads()), *infeasible_gates(prepared.arms)],
        known_good=prepared.known_good,
    )


def done_trials(plan: AbPlan) -> list[str]:
    """The trials of the plan that have a record: a re-run skips them."""
    return [f"{s.arm}-{s.trial}" for s in plan.trials if s.done]


def check_resumable(paths: AbPaths, plan: AbPlan) -> None:
    """A done trial is kept only if it booted the config (and the engine) its arm boots now."""
    arms = {a.name: a for a in plan.arms}
    for step in plan.trials:
        record = read_trial(paths, step.arm, step.trial) if step.done else None
        arm = arms[step.arm]
        if record is not None and (record.serve != arm.serve or record.engine not in (None, arm.engine)):
            raise InputError(
                f"trial {step.arm}-{step.trial} ran another serve config than arm {step.arm!r} boots now "
                f"(a changed campaign cell or known-good entry?): delete {step.folder} to run it again, "
                "or give the A/B another name"
            )


__all__ = [
    "benches_of",
    "Prepared",
    "ResolvedArm",
    "check_resumable",
    "done_trials",
    "plan_of",
    "prepare_arms",
    "resolve_arm",
]
