"""What an A/B will do, without booting anything: its arms as they boot, and its plan (the dry run).

    wanted = wanted_arms(workspace, spec, executables(target))     # each arm as the prepare pipeline takes it
    plan = plan_of(spec, prepared, paths, target)                  # every trial in run order, with its commands

The arms resolve to the engines and serve configs they boot (inline, or a campaign's cell, by the campaign's own
rules); the wing's prepare pipeline (ops/experiment/prepare.py) applies the known-good entry, gates, admits and
predicts them, one bench client for all and prefix caching matched. What the trials gave is ops/ab/result.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.ab_file import AbPaths, read_trial, trial_name
from redline.models import ServeConfig
from redline.models.ab import AbPlan, AbSpec, ArmPlan, ArmSpec, TrialPlan
from redline.models.campaign import Campaign, CellSpec
from redline.models.known_good import KnownGoodUse
from redline.models.serve import flag_value
from redline.ops.campaign_read import load_named
from redline.ops.experiment.prepare import Done, Prepared
from redline.ops.session import executables
from redline.policy import ab as plans
from redline.policy import known_good as kg
from redline.policy.campaign import cell_config, cell_engine  # the campaign's own rules make a cell's config
from redline.policy.planned import Made, Wanted, engines_of
from redline.policy.workload import Bench, Executables, boot_benches, commands_of, prompt_gates
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

    def applied(self, found: kg.Found | None) -> tuple[ServeConfig, KnownGoodUse | None]:
        """The config with the entry found applied (a knob the arm or its cell set wins), and what was done (None:
        no entry looked up)."""
        if found is None:
            return self.config, None
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


def wanted_arm(spec: AbSpec, name: str, arm: ResolvedArm, executables: Executables | None) -> Wanted[ArmPlan]:
    """The arm as the prepare pipeline takes it (policy/planned.py): its config with the entry found applied, then
    the methodology gates (policy/ab.py gate_arm), with its boot command."""
    engine = get_engine(arm.engine)
    own, source = arm.seqs_origin

    def make(found: kg.Found | None) -> Made[ArmPlan]:
        config, use = arm.applied(found)
        try:
            config, gates = plans.gate_arm(spec, name, config, own=own, source=source)
            commands = commands_of(engine, config, benches_of(spec), executables)
        except (ValueError, InputError) as exc:
            raise InputError(f"arm {name!r}: {exc}" if not str(exc).startswith("arm ") else str(exc)) from exc
        planned = ArmPlan(
            name=name,
            baseline=name == spec.baseline,
            engine=arm.engine,
            serve=config,
            gates=gates,
            bench_backend=flag_value(commands.benches[0][1], "--backend") if commands.benches else None,
            boot_command=commands.boot,
        )
        return Made(planned, use)

    return Wanted(name, arm.engine, arm.config.model, make)


def wanted_arms(workspace: Path, spec: AbSpec, executables: Executables | None) -> list[Wanted[ArmPlan]]:
    """Every arm resolved (inline, or a campaign's cell) as the prepare pipeline takes it."""
    return [wanted_arm(spec, a.name, resolve_arm(workspace, a, spec.engine), executables) for a in spec.arms]


def benches_of(spec: AbSpec) -> list[Bench]:
    """What every trial's server runs: the warm-up, then each concurrency (policy/workload.py, as a campaign's)."""
    return boot_benches(spec.loads(), spec.warmup_requests, repeats=1)


def plan_of(spec: AbSpec, prepared: Prepared[ArmPlan], paths: AbPaths, target: Target | None) -> AbPlan:
    """Every trial in run order with its commands; a trial with a record is marked done."""
    exes, steps = executables(target) if target is not None else None, benches_of(spec)
    commands = {a.name: commands_of(get_engine(a.engine), a.serve, steps, exes) for a in prepared.configs}
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
        engines=engines_of([(a.name, a.engine, a.serve) for a in prepared.configs]),
        arms=prepared.configs,
        trials=trials,
        boots=sum(not s.done for s in trials),
        gates=[*prompt_gates(spec.loads()), *prepared.gates],
        known_good=prepared.known_good("arm"),
    )


def done_trials(plan: AbPlan) -> list[str]:
    """The trials of the plan that have a record: a re-run skips them."""
    return [f"{s.arm}-{s.trial}" for s in plan.trials if s.done]


def done_of(paths: AbPaths, spec: AbSpec, prepared: Prepared[ArmPlan]) -> list[Done]:
    """Each trial with a record, and the arm that plans it now (ops/experiment/prepare.py check_resumable)."""
    done = []
    for _, arm, k in plans.run_order(spec):
        record = read_trial(paths, arm, k)
        if record is not None:
            done.append(Done(trial_name(arm, k), record.engine, record.serve, prepared.config(arm)))
    return done


__all__ = ["ResolvedArm", "benches_of", "done_of", "done_trials", "plan_of", "resolve_arm", "wanted_arm", "wanted_arms"]
