"""The campaign tools: each one a campaign file checked against the workspace, then one call into redline.ops.

Their inputs are the request models' fields (see toolkit.expand), beside `campaign` (a .yml file in
the workspace, such as campaigns/llama8b-h200.yml) and, for campaign_run, `wait_s`. A campaign's
results (cells/<cell>/verdict.yml, report.md and its PNGs) go to the folder named by the campaign's
`name`, beside its file, so they stay inside the workspace too.
"""

from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from redline.errors import InputError
from redline.ledger.campaign_file import check_results, read_campaign
from redline.models.ab import AbResult
from redline.models.campaign import Campaign
from redline.models.campaign_plan import CampaignPlan
from redline.models.campaign_report import CampaignReport
from redline.models.campaign_results import (
    CampaignCreated,
    CampaignRunResult,
    CampaignStatus,
    CampaignTable,
    ChampionReport,
)
from redline.ops.ab.run import AbKind
from redline.ops.campaign import plan as plan_ops
from redline.ops.campaign import results
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.run import CampaignKind
from redline.ops.campaign_read import load_campaign
from redline.ops.experiment.prepare import Kind, Opening, check_experiment, opener
from redline.ops.request_base import require_ack
from redline.ops.requests import (
    AbRunRequest,
    CampaignAggregateRequest,
    CampaignInitRequest,
    CampaignPlanRequest,
    CampaignReportRequest,
    CampaignRunRequest,
    CampaignStatusRequest,
    ChampionSelectRequest,
)
from redline.server.config import LADDER_PART, LADDER_SUFFIXES, relative_name, resolve_in_workspace
from redline.server.jobs import WAIT_DEFAULT_S
from redline.server.launch import RunView, launch_experiment
from redline.server.toolkit import (
    BOOTS,
    READ_ONLY,
    WRITE_ONCE,
    State,
    WaitArg,
    off_loop,
    state_of,
    tool,
)
from redline.targets import Target

_R = TypeVar("_R", bound=BaseModel)

# rewrites only the report's own files (report.md and its PNGs) in the campaign's results folder: the same
# verdicts give the same report
WRITES_REPORT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

CampaignArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1024,
        description=("The campaign file, a .yml path inside the workspace, such as campaigns/llama8b-h200.yml"),
    ),
]


CampaignRunView = RunView[CampaignRunResult]


# ---- the campaign file -------------------------------------------------------------------------------------


def campaign_path(state: State, name: str) -> tuple[Path, str]:
    """The campaign file's absolute path, and its name inside the workspace (as the ladder files are named)."""
    path = resolve_in_workspace(state.config.workspace, name, what="campaign")
    if path.suffix not in LADDER_SUFFIXES:
        raise InputError(
            f"campaign {name[:80]!r} must be a .yml file inside the workspace, such as campaigns/llama8b-h200.yml"
        )
    if not all(LADDER_PART.match(part) for part in PurePosixPath(name).parts):
        raise InputError(
            f"campaign {name[:80]!r}: name campaign files and folders with letters, digits and "
            ". _ - + @ = , only, starting with a letter or digit"
        )
    return path, relative_name(state.config.workspace, path)


async def checked(state: State, name: str) -> tuple[Path, Campaign]:
    """The campaign file and the campaign it holds (read once), once its base.from_ladder (if any) and its results
    folder stay inside the workspace."""
    path, _ = campaign_path(state, name)
    campaign = await off_loop(read_campaign, path)
    await off_loop(plan_ops.check_inside, path, state.config.workspace, campaign)
    await off_loop(check_results, path, campaign)
    return path, campaign


def target_for(state: State, campaign: Campaign, requested: str) -> Target:
    """The target a call names (else the campaign's), from the server's targets file; not yet connected."""
    return plan_ops.open_named_target(requested or campaign.target, state.config.target_specs(), requested)


# ---- the tools ---------------------------------------------------------------------------------------------


@tool(WRITE_ONCE, "Start a campaign", CampaignInitRequest)
async def _campaign_init(ctx: Context, campaign: CampaignArg, request: CampaignInitRequest) -> CampaignCreated:
    """Write a new campaign file (refused if the file exists, or if the campaign cannot plan): its grid of serve
    configs over one base, the workload, the concurrencies, the focus and the SLA. Answers with what every cell will
    boot, resolved as a run resolves it: the base (base.from_ladder's ceiling and fixed knobs under base's own
    knobs, and where each came from), each cell after the gates with its commands, and what a run will do with
    known-good.yml (campaign_run's dry run shows the entry applied)."""
    state = state_of(ctx)
    path, _ = campaign_path(state, campaign)
    plan_ops.check_inside(path, state.config.workspace, request.spec)
    check_results(path, request.spec)
    target = plan_ops.open_named_target(request.spec.target, state.config.target_specs())
    return await off_loop(
        plan_ops.campaign_init,
        path,
        request,
        workspace=state.config.workspace,
        target=target,
        widening=state.config.widen,
    )


@tool(READ_ONLY, "Plan a campaign", CampaignPlanRequest)
async def _campaign_plan(ctx: Context, campaign: CampaignArg, request: CampaignPlanRequest) -> CampaignPlan:
    """Every boot and bench command a run would do, cell by cell in order, with what the methodology gates changed
    and which cells already have a verdict. Starts nothing."""
    state = state_of(ctx)
    path, read = await checked(state, campaign)
    target = await off_loop(target_for, state, read, request.target)
    widening, workspace = state.config.widen, state.config.workspace
    return await off_loop(plan_ops.campaign_plan, path, request, target=target, widening=widening, workspace=workspace)


@tool(BOOTS, "Run a campaign", CampaignRunRequest)
async def _campaign_run(
    ctx: Context,
    campaign: CampaignArg,
    request: CampaignRunRequest,
    wait_s: WaitArg = WAIT_DEFAULT_S,
) -> CampaignRunView:
    """Run the campaign on its target: boot each cell without a verdict once, warm it up, bench it at every
    concurrency, stop it, write its verdict. Needs i_understand_this_submits_jobs=true; dry_run=true returns every
    command and starts nothing.

    Runs as a job (progress: cell k of N, concurrency, elapsed). Returns the result if it ends within wait_s,
    else the job id for job_status; job_cancel stops it and its server. A re-run resumes after the last cell."""
    ack = request.i_understand_this_submits_jobs
    require_ack(ack, "campaign_run", dry_run=request.dry_run)  # fail closed before anything
    state = state_of(ctx)
    path, read = await checked(state, campaign)
    target = await off_loop(target_for, state, read, request.target)
    workspace = state.config.workspace  # the server's: base.from_ladder stays in it
    loaded = await off_loop(load_campaign, path, workspace, read)  # the file as checked: parsed once for the call
    args = {"campaign": relative_name(workspace, path), "name": loaded.campaign.name}

    async def again() -> CampaignKind:  # a job's campaign: the file as it reads at its start (it may have changed)
        return CampaignKind(await off_loop(load_campaign, loaded.path, workspace))

    tool = (CampaignRunView, CampaignRunResult, "campaign_run")
    said: Callable[[CampaignRunResult], tuple[str, str]] = lambda r: (r.reason, r.next)  # noqa: E731
    return await _launched(ctx, tool, CampaignKind(loaded), again, request, target, said, args, wait_s)


async def _launched(
    ctx: Context,
    tool: tuple[type[RunView[_R]], type[_R], str],
    kind: Kind[_R],
    again: Callable[[], Awaitable[Kind[_R]]],
    request: CampaignRunRequest | AbRunRequest,
    target: Target,
    said: Callable[[_R], tuple[str, str]],
    args: dict[str, Any],
    wait_s: float,
) -> RunView[_R]:
    """An experiment tool's launch (`tool`: its view, its answer, its name): what a run would refuse refused now
    (not as a failed job), then the dry run answered at once, or the run launched as a job that opens the
    experiment `again` (ops/experiment/prepare.py, as the CLI does), each engine widened as the server config says
    (never a tool argument)."""
    state = state_of(ctx)
    if not request.dry_run:
        await off_loop(check_experiment, kind, target, state.config.widen)

    async def kind_of(dry_run: bool) -> Kind[_R]:
        return kind if dry_run else await again()

    opening = Opening(request.skip_known_good, state.config.widen, state.versions)
    return await launch_experiment(
        ctx,
        *tool,
        opener(kind_of, opening),
        target=target,
        dry_run=request.dry_run,
        said=said,
        args=args,
        wait_s=wait_s,
    )


@tool(READ_ONLY, "Campaign status", CampaignStatusRequest)
async def _campaign_status(ctx: Context, campaign: CampaignArg, request: CampaignStatusRequest) -> CampaignStatus:
    """Which cells are done (green or red), which one a runner is in, which are pending, and what to do next."""
    state = state_of(ctx)
    path, _ = await checked(state, campaign)
    return await off_loop(results.campaign_status, path, request, workspace=state.config.workspace)


@tool(READ_ONLY, "Aggregate a campaign", CampaignAggregateRequest)
async def _campaign_aggregate(
    ctx: Context,
    campaign: CampaignArg,
    request: CampaignAggregateRequest,
) -> CampaignTable:
    """One table of cells x concurrencies: the focus metric (mean and std over trials) and the guards beside it
    (every request completed, inside the SLA), with the cells that have no verdict yet."""
    state = state_of(ctx)
    path, _ = await checked(state, campaign)
    return await off_loop(results.campaign_aggregate, path, request, workspace=state.config.workspace)


@tool(READ_ONLY, "Select the champion", ChampionSelectRequest)
async def _champion_select(ctx: Context, campaign: CampaignArg, request: ChampionSelectRequest) -> ChampionReport:
    """The champion under the SLA in the baseline's regime, or "no improvement" when no cell beats the baseline by
    more than the noise band; the top cells; other regimes listed apart. Every champion is a DRAFT."""
    state = state_of(ctx)
    path, _ = await checked(state, campaign)
    return await off_loop(results.champion_select, path, request, workspace=state.config.workspace)


@tool(WRITES_REPORT, "Write the campaign report", CampaignReportRequest)
async def _campaign_report(ctx: Context, campaign: CampaignArg, request: CampaignReportRequest) -> CampaignReport:
    """Write report.md and its PNG plots (throughput and median TPOT against concurrency, the Pareto front with the
    champion marked) into the campaign's results folder; returns the table, the champion and the data behind
    each plot."""
    state = state_of(ctx)
    path, _ = await checked(state, campaign)
    return await off_loop(campaign_report, path, request, workspace=state.config.workspace)


# ---- the A/B ---------------------------------------------------------------------------------------------------


AbRunView = RunView[AbResult]


@tool(BOOTS, "Run an A/B", AbRunRequest)
async def _ab_run(ctx: Context, request: AbRunRequest, wait_s: WaitArg = WAIT_DEFAULT_S) -> AbRunView:
    """A/B two or more serve configs on one target: interleaved A B A B ..., a clean boot per arm per trial (at
    least 3 for a VERDICT), the same workload at every concurrency; per trial and mean ± std: median TPOT, ITL,
    TTFT and output throughput (with its % of speed-of-light); the node of every trial. VERDICT only when every
    rule holds (same node, >= 3 trials, matched regime and prefix caching, the claim's metric, a named baseline),
    else a DRAFT naming each rule that failed; Welch's t-test decides what is real. Ends with the next levers.
    Where an arm turns on a lever that can change the model's answers (KV or weight quantization, dtype,
    speculation), every arm answers a fixed prompt set through its own server and each such arm's `accuracy` says
    pass, fail or not run against the baseline arm (a consistency check, not a benchmark score).

    Needs i_understand_this_submits_jobs=true; dry_run=true lists every boot and bench command in order and starts
    nothing. A matching known-good entry is applied to every arm unless skip_known_good. Runs as a job; a re-run
    resumes (and may add trials); job_cancel stops it and its server.
    """
    r, state = request, state_of(ctx)
    require_ack(r.i_understand_this_submits_jobs, "ab_run", dry_run=r.dry_run)  # fail closed before anything
    state.check_target(r.spec.target)
    kind = AbKind(state.config.workspace, r.spec)
    args = {"ab": r.spec.name, "arms": [a.name for a in r.spec.arms], "trials": r.spec.trials}

    async def again() -> AbKind:  # a job's A/B: the spec as given
        return kind

    tool = (AbRunView, AbResult, "ab_run")
    said: Callable[[AbResult], tuple[str, str]] = lambda a: (a.summary, a.next)  # noqa: E731
    target = state.config.open_target(r.spec.target)
    return await _launched(ctx, tool, kind, again, r, target, said, args, wait_s)
