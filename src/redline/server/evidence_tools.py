"""The evidence tools: perf_baseline_record and perf_baseline_diff, the known-good registry's, the lever frontier
and champion_apply (what experiments leave, read, recorded and written back).

Their inputs are the request models' fields (see toolkit.expand), beside ab_run's `wait_s`. Every file
they name is a path inside the workspace; they write only ab/<name>.yml and ab/<name>/, baselines.yml,
known-good.yml and (champion_apply) the values file named, there.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

from redline.models.baseline import BaselineDiff, BaselineRecorded
from redline.models.deploy import ChampionApplied
from redline.models.frontier import FrontierList
from redline.models.known_good import KnownGoodAnswer, KnownGoodFound, KnownGoodList, KnownGoodRecorded
from redline.offload import off_loop
from redline.ops.ab import apply as apply_ops
from redline.ops.evidence import baseline as baseline_ops
from redline.ops.evidence import frontier as frontier_ops
from redline.ops.evidence import known_good as known_good_ops
from redline.ops.requests_evidence import (
    ChampionApplyRequest,
    KnownGoodConfigRequest,
    KnownGoodListRequest,
    KnownGoodLookupRequest,
    KnownGoodRecordRequest,
    LeverFrontierRequest,
    PerfBaselineDiffRequest,
    PerfBaselineRecordRequest,
)
from redline.server.toolkit import READ_ONLY, state_of, tool

# changes one entry of a file a person also edits in the workspace (baselines.yml, known-good.yml); the same call
# again leaves the same entry
ENTRY_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


@tool(ENTRY_WRITE, "Record a baseline", PerfBaselineRecordRequest)
async def _perf_baseline_record(ctx: Context, request: PerfBaselineRecordRequest) -> BaselineRecorded:
    """Record a named baseline in baselines.yml from a measured result: a campaign cell (campaign, cell), an A/B arm
    (ab, arm), or a bench result file (bench_file, with its context). Each concurrency is kept with its full
    context, its metrics (mean ± std) and its % of speed-of-light. Comments in the file are kept."""
    return await off_loop(baseline_ops.perf_baseline_record, state_of(ctx).config.workspace, request)


@tool(READ_ONLY, "Diff against a baseline", PerfBaselineDiffRequest)
async def _perf_baseline_diff(ctx: Context, request: PerfBaselineDiffRequest) -> BaselineDiff:
    """A result (a campaign cell, an A/B arm, a bench file, or another baseline) against a recorded baseline: GREEN
    (the focus improves beyond the tolerance, no guarded metric regresses beyond it), YELLOW (within tolerance, or a
    win with a guarded regression inside the looser band), RED (a regression beyond it). Contexts that differ in
    model, GPU, engine version, workload, regime or parallelism are refused, each differing field named."""
    return await off_loop(baseline_ops.perf_baseline_diff, state_of(ctx).config.workspace, request)


@tool(ENTRY_WRITE, "Write a champion back into its deploy", ChampionApplyRequest)
async def _champion_apply(ctx: Context, request: ChampionApplyRequest) -> ChampionApplied:
    """Write an A/B's closed champion (a VERDICT, its known-good config recorded, a next lever named) into the
    deploy's Helm values file: its flags merged into the engine's argument list at args_key (default vllm.extraArgs;
    a flag already there is replaced in place, the rest kept; comments and indentation kept), never the model, host,
    port or load format. dry_run=true answers the diff and its diff_id; the write needs expect=<diff_id> and
    i_understand_this_writes_the_deploy=true, and records the champion as the new baseline (replacing `baseline`).
    A champion that turns on a lever risking the model's answers (KV or weight quantization, speculation) is refused
    without its accuracy gate's pass (ab_run's arms' `accuracy`: a consistency check against the baseline arm)."""
    return await off_loop(apply_ops.champion_apply, state_of(ctx).config.workspace, request)


@tool(READ_ONLY, "The lever frontier", LeverFrontierRequest)
async def _lever_frontier(ctx: Context, request: LeverFrontierRequest) -> FrontierList:
    """The lever frontier (frontier.yml), per model, hardware and engine version: the levers each A/B tried (the run,
    its outcome, why a refuted one lost) and those not tried yet, best expected gain per cost first (predictions),
    each with the gate that would prove it; and what each frontier says next (its top untried lever, or, with none
    left, which levers emptied it). ab_run keeps it; champion_select leaves out the levers it judged."""
    return await off_loop(frontier_ops.lever_frontier, state_of(ctx).config.workspace, request)


@tool(ENTRY_WRITE, "Record a known-good config", KnownGoodRecordRequest)
async def _known_good_record(ctx: Context, request: KnownGoodRecordRequest) -> KnownGoodRecorded:
    """Record the serve flags a model needs on a hardware and engine version (to boot or survive load), why, and the
    evidence, in known-good.yml: given whole, or from a ladder's recorded ceiling (from_ladder, in one call), a
    campaign cell (from_campaign, cell) or an A/B arm (from_ab, arm). The same key again updates that entry."""
    return await off_loop(known_good_ops.known_good_record, state_of(ctx).config.workspace, request)


@tool(READ_ONLY, "Look up a known-good config", KnownGoodLookupRequest)
async def _known_good_lookup(ctx: Context, request: KnownGoodLookupRequest) -> KnownGoodFound:
    """The known-good entry for a model on a hardware and engine version: the flags it needs and why."""
    return await off_loop(known_good_ops.known_good_lookup, state_of(ctx).config.workspace, request)


@tool(READ_ONLY, "List known-good configs", KnownGoodListRequest)
async def _known_good_list(ctx: Context, request: KnownGoodListRequest) -> KnownGoodList:
    """Every entry of known-good.yml (or one model's)."""
    return await off_loop(known_good_ops.known_good_list, state_of(ctx).config.workspace, request)


@tool(ENTRY_WRITE, "Known-good config: record, look up or list", KnownGoodConfigRequest)
async def _known_good_config(ctx: Context, request: KnownGoodConfigRequest) -> KnownGoodAnswer:
    """The known-good registry (known-good.yml) in one tool, by its verb, with that verb's fields: record (the flags
    a model needs on a hardware and engine version, why and the evidence: given whole, or from_ladder, from_campaign
    with cell, from_ab with arm), lookup (the entry for a model, hardware and engine version, or why none applies),
    list (every entry, or a model's). Answers exactly what known_good_record, known_good_lookup or known_good_list
    answers; a field the verb does not take is refused by name. Only record writes."""
    return await off_loop(known_good_ops.known_good_config, state_of(ctx).config.workspace, request)
