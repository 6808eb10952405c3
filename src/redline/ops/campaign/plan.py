"""Campaign operations that start nothing, as plain functions that the MCP tools and the CLI both call.

    created = campaign_init(path, CampaignInitRequest(spec=campaign))   # a new file; what each cell will boot
    plan = campaign_plan(path, target=target)                 # every command; starts nothing

What the verdicts say (status, the table, the champion) is in ops/campaign/results.py; the run itself (boot
each cell once, bench it, stop it, write its verdict) is in ops/campaign/run.py. Each returns a pydantic model;
each refusal is a RedlineError saying what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from redline.errors import InputError, RedlineError, TargetConfigError
from redline.ledger.campaign_file import names_in_use, read_campaign, read_verdicts, write_campaign
from redline.models import Widenings
from redline.models.campaign import Campaign
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import CampaignCreated
from redline.ops.campaign.noise import noise_outlook
from redline.ops.campaign.replicates import replicates_left
from redline.ops.campaign.search import search_state
from redline.ops.campaign_read import (  # re-exported: the file read and resolved
    Loaded,
    from_ladder_path,
    load_campaign,
)
from redline.ops.evidence.known_good_apply import default_registry, known_good_outlook
from redline.ops.experiment.prepare import Prepared, Survey, prepare
from redline.ops.requests import (
    CampaignInitRequest,
    CampaignPlanRequest,
)
from redline.ops.session import executables
from redline.policy import campaign as plans
from redline.policy.planned import Settled
from redline.targets import BaseSpec, Target, open_target

# ---- loading -----------------------------------------------------------------------------------------------


def check_inside(path: str | Path, workspace: Path, campaign: Campaign | None = None) -> None:
    """Refuse a base.from_ladder that leads out of the workspace, through the loader's own check (the MCP wiring
    calls this before any tool, so a bad file is refused before anything else is read).

    `campaign`: the one about to be written at path (campaign_init); else the file's.
    """
    from_ladder_path(Path(path), campaign or read_campaign(Path(path)), workspace)


def campaign_target(path: str | Path, requested: str = "") -> str:
    """The target a call runs on: the one asked for, else the campaign's (the wiring opens it by this name)."""
    return requested or read_campaign(Path(path)).target


def open_campaign_target(path: str | Path, specs: Mapping[str, BaseSpec], requested: str = "") -> Target:
    """The target a call runs on, opened from the targets file; a name not there is an error naming `target`."""
    return open_named_target(campaign_target(path, requested), specs, requested)


def open_named_target(name: str, specs: Mapping[str, BaseSpec], requested: str = "") -> Target:
    """The target of that name (not yet connected); an unknown one is an error naming `target`."""
    try:
        return open_target(name, dict(specs))
    except TargetConfigError as exc:
        where = "target" if not requested else "the target asked for"
        raise TargetConfigError(f"{where}: {exc}") from exc


def campaign_init(
    path: str | Path,
    request: CampaignInitRequest,
    *,
    workspace: Path | None = None,
    target: Target | None = None,
    widening: Widenings | None = None,
) -> CampaignCreated:
    """Write a new campaign file at path (refused if one is there) after checking it plans cleanly; the answer is
    what every cell will boot, resolved as a run resolves it (base.from_ladder read, the gates applied, each cell
    admitted), with what a run will do with the known-good registry. `target`: only its engine commands."""
    path = Path(path)
    if path.exists():
        raise InputError(f"{path}: a campaign is already there; run it, or give another file name")
    if used := names_in_use(path.parent, request.spec.name, path):
        raise InputError(
            f"name: {request.spec.name!r} is the name of {used[0]} already, and a name is its results folder "
            f"({path.parent / request.spec.name}): give this campaign another name"
        )
    write_campaign(path, request.spec)
    try:
        loaded = load_campaign(path, workspace)  # a campaign that cannot plan is not left behind
        plan = plan_for(loaded, None, widening, executables_of=target)
    except RedlineError:
        path.unlink(missing_ok=True)
        raise
    return CampaignCreated(
        name=loaded.campaign.name,
        target=loaded.campaign.target,
        base=loaded.base,
        base_from=loaded.base_from,
        known_good=known_good_outlook(default_registry(path), loaded.base.model, plan.engines),
        plan=plan,
        next="campaign_run with dry_run=true: every cell as it boots on the target, the known-good entry applied "
        "where one matches, nothing started",
    )


# ---- the plan -----------------------------------------------------------------------------------------------


def check_parallel(campaign: Campaign, target: Target) -> None:
    """Cells at once need as many servers at once: refused before anything boots."""
    if campaign.parallel > target.max_servers:
        raise InputError(
            f"parallel: {campaign.parallel} runs {campaign.parallel} cells at once, each on a server of its own, "
            f"but target {target.name!r} runs {target.max_servers} server(s) at a time (a host runs one engine "
            f"at a time): set parallel: {target.max_servers}, or run the campaign on a target that runs a server "
            "per pod (kind: kubernetes)"
        )


def prepared_cells(
    loaded: Loaded, target: Target | None, widening: Widenings | None, survey: Survey | None = None
) -> Prepared[CellPlan]:
    """The campaign's cells through the wing's prepare pipeline (ops/experiment/prepare.py), with `target`'s engine
    commands (none: each engine's default)."""
    wanted = plans.wanted_cells(loaded.campaign, loaded.base, loaded.cells, executables(target) if target else None)
    return prepare(
        loaded.campaign, "cell", wanted, alike=False, survey=survey, workspace=loaded.workspace, widening=widening
    )


def planned(loaded: Loaded, prepared: Prepared[CellPlan]) -> CampaignPlan:
    """The campaign's plan of its cells as prepared: each with its verdict if done, the gates, and the boots a run may
    do now (a search's within its budget left, none once it stopped; the replicates the top cells may still owe),
    with the search as search.yml says it."""
    done = {name: v.verdict for name, v in read_verdicts(loaded.results, loaded.names).items()}
    settled = Settled(prepared.configs, prepared.uses, prepared.client)
    plan = plans.assemble(loaded.campaign, settled, path=str(loaded.path), done=done)
    update: dict[str, object] = {
        "replicates": replicates_left(loaded),
        "noise": noise_outlook(loaded),
        "gates": [*plan.gates, *prepared.gates],
    }
    spec = loaded.campaign.search
    if spec is not None:
        state = search_state(loaded, plan)
        todo = [c for c in plan.cells if c.done is None]
        left = max(0, (spec.budget_boots or len(plan.cells)) - state.booted) if state.stopped is None else 0
        boots = min(len(todo), left)
        update |= {"search": state, "boots": boots, "benches": sum(len(c.benches) for c in todo[:boots])}
    return plan.model_copy(update=update)


def plan_for(
    loaded: Loaded, target: Target | None, widening: Widenings | None, *, executables_of: Target | None = None
) -> CampaignPlan:
    """The campaign's plan on `target` (its engine commands; checked to run as many servers as `parallel` asks), or
    with `executables_of`'s engine commands only, unchecked (campaign_init); no known-good entry looked up."""
    if target is not None:
        check_parallel(loaded.campaign, target)
    return planned(loaded, prepared_cells(loaded, target or executables_of, widening))


def campaign_plan(
    path: str | Path,
    request: CampaignPlanRequest | None = None,
    *,
    target: Target | None = None,
    widening: Widenings | None = None,
    survey: Survey | None = None,
    workspace: Path | None = None,
) -> CampaignPlan:
    """Every boot command and bench command per cell, in run order, with the gates' changes. Starts nothing.

    `target` (opened by the caller from request.target or the campaign's) only supplies its engine commands.
    `widening`: the server config's, per engine. `survey`: the target as campaign_run asks it first (its GPU, each
    engine's version, the model's files), so the plan applies the known-good entry and predicts each cell as a run
    does. `workspace`: the server's, that base.from_ladder stays in (default: the one the file's layout names).
    """
    loaded = load_campaign(path, workspace)
    if survey is None:
        return plan_for(loaded, target, widening)
    if target is not None:
        check_parallel(loaded.campaign, target)
    return planned(loaded, prepared_cells(loaded, target, widening, survey))


__all__ = [
    "Loaded",
    "campaign_init",
    "campaign_plan",
    "campaign_target",
    "check_inside",
    "load_campaign",
    "open_campaign_target",
    "open_named_target",
    "plan_for",
]
