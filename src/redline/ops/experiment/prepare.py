"""Opening an experiment: the one way a campaign or an A/B becomes the plan and the judge the wing runs (the MCP
tools and the CLI alike), and the one pipeline that prepares its configs (a campaign's cells, an A/B's arms).

    opened = opener(kind_of, Opening(skip_known_good=False, widening=widening, versions=versions))
    answer = await start(opened, target, dry_run=False, tool="campaign_run", ...)   # ops/experiment/run.py
    check_experiment(kind, target, widening)      # what a run would refuse, refused before a job is queued

A kind of experiment (`Kind`) supplies only what is its own: its spec, the configs it wants (a campaign's grid or
search; an A/B's arms, inline or a campaign's cells) and how each is made, and its plan and judge over them once
prepared. Everything else is the wing's, here: the target checked, surveyed once, every config prepared, and for a
run each unit's record checked against what is planned for it now and every model path checked on the target.

The target is surveyed once (its GPU and each engine's version there, each model's config.json), the known-good entry
found for each config (policy/known_good.py), each config made with it and the experiment's gates and settled
(policy/planned.py: no two alike, one bench client, prefix caching matched), admitted by its engine with the server
config's widening, and predicted by the memory model against the workload (ops/experiment/predicted.py). Without a
survey (a plan made without the target: campaign_init, campaign_plan) no entry is looked up and nothing predicted.
What an experiment supplies is only what it wants and how each config is made (policy/planned.py `Wanted`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.results import Results
from redline.models import ServeConfig, Widenings
from redline.models.experiment import ExperimentSpec
from redline.models.known_good import KnownGoodUse
from redline.models.planned import PlannedConfig
from redline.models.shape import ModelShape
from redline.ops.evidence.context import ModelFiles, model_files
from redline.ops.evidence.known_good_apply import Identity, found_for, identify, registry_path
from redline.ops.evidence.versions import EngineVersions
from redline.ops.experiment.predicted import infeasible_gates, predicted
from redline.ops.experiment.run import Judge, Opener, Plan, start
from redline.ops.session import Progress, ServeSession, say
from redline.policy import known_good as kg
from redline.policy.planned import Wanted, settle
from redline.targets import Target

P = TypeVar("P", bound=PlannedConfig)


@dataclass(frozen=True)
class Survey:
    """What the target is, asked once before a plan: its GPU and each engine's version there, each model's files;
    and where the known-good entry is looked up (or that it is not: `skip`)."""

    registry: Path
    skip: bool
    identities: dict[str, Identity]
    files: dict[str, ModelFiles]

    def found(self, wanted: Wanted[Any]) -> kg.Found:
        """The entry for this config (or why none), by its model's files and its engine's identity."""
        hash_ = self.files[wanted.model].config_hash
        identity = self.identities[wanted.engine]
        return found_for(self.registry, wanted.model, hash_, identity, wanted.engine, skip=self.skip)

    def shape(self, model: str) -> ModelShape | None:
        return self.files[model].shape[0] if model in self.files else None

    def version(self, engine: str) -> str | None:
        return self.identities[engine].engine_version


async def survey(
    target: Target,
    wanted: Sequence[Wanted[Any]],
    registry: Path,
    *,
    skip: bool,
    versions: EngineVersions | None = None,
    progress: Progress | None = None,
) -> Survey:
    """The target asked what it is, once per engine and per model the configs boot (each engine's version from
    `versions` where it holds it)."""
    engines = dict.fromkeys(w.engine for w in wanted)
    identities = {e: await identify(target, get_engine(e), versions, progress) for e in engines}
    files = {m: await model_files(target, m) for m in dict.fromkeys(w.model for w in wanted)}
    return Survey(registry, skip, identities, files)


@dataclass(frozen=True)
class Prepared(Generic[P]):
    """An experiment's configs as its run boots them, in order, and what was learned making them: what the known-good
    entry did to each, the one bench client, the target's survey (None: planned without it)."""

    spec: ExperimentSpec
    configs: list[P]
    uses: dict[str, KnownGoodUse]
    client: str
    survey: Survey | None

    def config(self, name: str) -> P:
        return next(c for c in self.configs if c.name == name)

    @property
    def gates(self) -> list[str]:
        """What the plan says of every config: each one the memory model predicts infeasible."""
        return infeasible_gates(self.configs)

    def known_good(self, what: str) -> KnownGoodUse:
        """One account of what the registry did for every config."""
        if not self.uses:
            return KnownGoodUse(applied=False, note="no known-good entry looked up: planned without the target")
        return kg.one_account(self.uses, what)

    def files(self, model: str) -> ModelFiles:
        found = self.survey.files.get(model) if self.survey is not None else None
        return found or ModelFiles(None, None, "not read")

    def version(self, engine: str) -> str | None:
        """The engine's version as the target answered (None: not asked, or unknown)."""
        return self.survey.version(engine) if self.survey is not None else None


def _admitted(what: str, config: P, widening: Widenings | None) -> P:
    """The config's flags and env against its engine's allowlist (and its widening): refused now, not at its boot;
    what of the widening it uses."""
    try:
        widened = get_engine(config.engine).admit(config.serve, (widening or {}).get(config.engine))
    except InputError as exc:
        raise InputError(f"{what} {config.name!r}: {exc}") from exc
    return config.model_copy(update={"widened": widened})


def prepare(
    spec: ExperimentSpec,
    what: str,
    wanted: Sequence[Wanted[P]],
    *,
    alike: bool,
    survey: Survey | None,
    workspace: Path,
    widening: Widenings | None,
) -> Prepared[P]:
    """The configs wanted, made with the entry the survey finds for each (none without one), settled, admitted and
    (with a survey) predicted against the workload (its KV need: `kv_need`)."""
    settled = settle(what, wanted, survey.found if survey is not None else None, alike=alike)
    configs = [_admitted(what, c, widening) for c in settled.configs]
    if survey is not None:
        needed = spec.kv_need
        configs = predicted(configs, survey.shape, survey.identities, workspace, needed)
    return Prepared(spec, configs, settled.uses, settled.client, survey)


# ---- before a run boots anything --------------------------------------------------------------------------------


def check_target(spec: ExperimentSpec, kind: str, target: Target) -> None:
    """An experiment runs on the target its spec names."""
    if target.name != spec.target:
        raise InputError(
            f"the {kind} runs on target {spec.target!r}, not {target.name!r}: run it there, or change its target: "
            "in its file"
        )


@dataclass(frozen=True)
class Done:
    """A unit with a record: the engine and serve config it was measured with (engine None: an older record that
    names none), and the config that plans it now."""

    unit: str
    engine: str | None
    serve: ServeConfig
    planned: PlannedConfig


def check_resumable(results: Results, done: Iterable[Done], kind: str, record: str, fix: str) -> None:
    """A unit with a record is skipped only if it measured the config (and the engine) planned for it now; else
    InputError naming its folder (`record`: what its record is called; `fix`: the other way out)."""
    for d in done:
        if d.serve != d.planned.serve or d.engine not in (None, d.planned.engine):
            raise InputError(
                f"{results.word} {d.unit!r} has a {record} made with another serve config (or engine) than the {kind} "
                f"plans now: delete {results.unit_dir(d.unit)} to run it again, {fix}"
            )


async def check_models(target: Target, prepared: Prepared[Any], fix: str) -> None:
    """Every model given as a path is there on the target (a hub id is the engine's to fetch)."""
    for config in dict.fromkeys((c.engine, c.serve.model) for c in prepared.configs):
        await ServeSession(target, get_engine(config[0])).check_model_path(config[1], fix)


# ---- opening an experiment: what a kind supplies, and the one way it is opened ------------------------------------

_A = TypeVar("_A")
_A_co = TypeVar("_A_co", covariant=True)


class Kind(Protocol[_A_co]):
    """What one kind of experiment gives the wing: its spec and names, the configs it wants, its own refusals, the
    units it has records of, and its plan and judge over the configs prepared."""

    word: str  # what the experiment is called in messages: campaign, A/B
    what: str  # what one of its configs is: cell, arm
    alike: bool  # two configs alike as given may both be booted (an A/B's A/A), or are twins (a campaign's cells)
    record: str  # what a unit's record is called in messages: verdict, record
    again: str  # the other way out of a record made with another config than planned now
    model_fix: str  # how to fix a model path the target does not have

    @property
    def spec(self) -> ExperimentSpec: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def results(self) -> Results: ...  # where its units' records are

    def wanted(self, target: Target | None) -> list[Wanted[Any]]: ...  # target: whose engine commands plan them

    def check(self, target: Target) -> None: ...  # what this kind refuses on the target before anything

    # each unit with a record, and its config now (refusing one this kind cannot go on past: a campaign's red cell)
    def done(self, prepared: Prepared[Any]) -> list[Done]: ...

    def opened(self, prepared: Prepared[Any], target: Target, dry_run: bool) -> tuple[Plan[Any], Judge[Any, _A_co]]: ...


@dataclass(frozen=True)
class Opening:
    """How a call opens its experiment: the known-good entry looked up or not, each engine's widening (the server
    config's: never a tool argument), the engine versions the session knows (a dry run reuses them, a run asks
    again: an engine may have changed since)."""

    skip_known_good: bool = False
    widening: Widenings | None = None
    versions: EngineVersions = field(default_factory=EngineVersions)


async def open_experiment(
    kind: Kind[_A], target: Target, *, dry_run: bool, opening: Opening, progress: Progress | None = None
) -> tuple[Plan[Any], Judge[Any, _A]]:
    """The experiment as the wing runs it on target: the target checked, surveyed, every config prepared; for a run,
    each unit's record checked against its config now, and (a unit left to boot) every model path on the target."""
    check_target(kind.spec, kind.word, target)
    kind.check(target)
    wanted = kind.wanted(target)
    versions = opening.versions if dry_run else opening.versions.fresh()
    registry = registry_path(kind.workspace)
    found = await survey(target, wanted, registry, skip=opening.skip_known_good, versions=versions, progress=progress)
    await say(progress, 0.7, f"planning every {kind.what} with the known-good entry (if any) applied")
    prepared = _prepared(kind, wanted, found, opening.widening)
    if not dry_run:
        check_resumable(kind.results, kind.done(prepared), kind.word, kind.record, kind.again)
    plan, judge = kind.opened(prepared, target, dry_run)
    if not dry_run and plan.todo():  # a run with a unit to boot: every model it names there
        await check_models(target, prepared, kind.model_fix)
    return plan, judge


def _prepared(
    kind: Kind[Any], wanted: list[Wanted[Any]], found: Survey | None, widening: Widenings | None
) -> Prepared[Any]:
    return prepare(
        kind.spec, kind.what, wanted, alike=kind.alike, survey=found, workspace=kind.workspace, widening=widening
    )


def check_experiment(kind: Kind[Any], target: Target, widening: Widenings | None = None) -> Prepared[Any]:
    """Every refusal a run can meet before it asks the target anything: the target, the kind's own, its configs
    planned without the target, each unit's record against them. The MCP tools call it before they queue a job, so
    a bad experiment is an error now, not a failed job; the job opens it again (open_experiment)."""
    check_target(kind.spec, kind.word, target)
    kind.check(target)
    prepared = _prepared(kind, kind.wanted(target), None, widening)
    check_resumable(kind.results, kind.done(prepared), kind.word, kind.record, kind.again)
    return prepared


def opener(kind_of: Callable[[bool], Awaitable[Kind[_A]]], opening: Opening) -> Opener[_A]:
    """How the experiment opens on a target (ops/experiment/run.py `start`): `kind_of(dry_run)` gives it (a dry run's
    as the call read it, a run's as its job reads it then), open_experiment the rest."""

    async def opened(target: Target, dry_run: bool, progress: Progress | None) -> tuple[Plan[Any], Judge[Any, _A]]:
        kind = await kind_of(dry_run)
        return await open_experiment(kind, target, dry_run=dry_run, opening=opening, progress=progress)

    return opened


async def run_kind(
    kind: Kind[_A], target: Target, *, tool: str, dry_run: bool, opening: Opening, progress: Progress | None = None
) -> _A:
    """An experiment run (or previewed: `dry_run`) on target from a function call, as `redline campaign run`, `redline
    ab run` and a probe call it (the caller has checked the acknowledgement): the target told whether it may create
    anything, the experiment opened (open_experiment) and run by the wing (ops/experiment/run.py `start`)."""
    target.dry_run = dry_run

    async def kind_of(_: bool) -> Kind[_A]:
        return kind

    opened = opener(kind_of, opening)
    return await start(opened, target, dry_run=dry_run, tool=tool, progress=progress, widening=opening.widening)


__all__ = [
    "Done",
    "Kind",
    "Opening",
    "Prepared",
    "Survey",
    "check_experiment",
    "check_models",
    "check_resumable",
    "check_target",
    "open_experiment",
    "opener",
    "prepare",
    "run_kind",
    "survey",
]
