"""One request model per operation: what the caller asks for, checked once, whichever way it came in.

    request = LadderInitRequest(model="llama8b", model_path="/models/llama8b",
                                floor_max_model_len=32768, floor_max_num_batched_tokens=8192)
    ladder_init(path, request)

The MCP tool's input schema (server/registry.py) and the CLI's flags (cli/flags.py) are both
generated from these fields, so a field added here reaches both; the test
tests/test_operations_agree.py fails if it does not. Two things are not part of a request,
because each surface names them its own way: the ladder or campaign file (a workspace path over MCP, a
local path at a terminal) and how long an MCP call waits for its job (`wait_s`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from redline.engines import DEFAULT_ENGINE, EngineName, engine_names
from redline.models.ab import AbSpec
from redline.models.campaign import Campaign
from redline.models.context import ContextDescriptor
from redline.models.known_good import Evidence
from redline.models.ladder import FixedKnobs, Policy

WAIT_MAX_S = 300.0  # the longest an MCP call blocks on a job before it returns the job id
MAX_TEXT = 64 * 1024 * 1024  # the longest boot log or bench file a request carries
ENGINES = list(engine_names())

Tokens = Annotated[int, Field(gt=0, le=1 << 26)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
# Optional text is "" when not given, never None: the MCP SDK would parse a JSON-looking string given for a
# `str | None` argument into a dict (its pre_parse_json), and a bench result is JSON.
WorkspaceFile = Annotated[str, Field(max_length=1024)]


TargetName = Annotated[str, Field(
    min_length=1, max_length=128, description="A target name from the targets file, such as local")]
Replay = Annotated[int | None, Field(
    ge=1, le=100_000, description="Boot rung N's exact config again, as a new rung (re-verify a past result)")]
JobId = Annotated[str, Field(min_length=1, max_length=64, description="A job id from rung_run, smoke_test or job_list")]
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]


class Request(BaseModel):
    """What every request shares: unknown fields are refused, and a request never changes once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LadderInitRequest(Request):
    """A new ladder: the model, the known-good boot it climbs from, and what the climb holds fixed."""

    model: Annotated[str, Field(
        min_length=1, max_length=200, description="A short key for the model, such as llama-3.1-8b")]
    model_path: Annotated[str, Field(
        min_length=1, max_length=4096,
        description="The model as the engine's serve command takes it: a path or hub id")]
    floor_max_model_len: Annotated[Tokens, Field(
        description="max_model_len of a boot known to work; the climb starts here")]
    floor_max_num_batched_tokens: Annotated[Tokens, Field(description="max_num_batched_tokens of that known-good boot")]
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, description="Held fixed through the climb")] = 0.9
    min_concurrency: Annotated[int, Field(
        ge=1, le=1 << 16, description="Max-length requests the ceiling must hold at once")] = 1
    policy: Annotated[Policy, Field(
        description="signal: next rung from the KV figures the boot log gives; doubling: double each time")] = "signal"
    gpu_name: Annotated[str | None, Field(
        max_length=200, description="The GPU's name, such as NVIDIA H200 (else read from the first boot's host)",
    )] = None
    gpu_memory_gib: Annotated[float | None, Field(
        gt=0, le=1 << 20, description="The GPU's memory in GiB (else read from the first boot's host)")] = None
    gpu_count: Annotated[int, Field(ge=1, le=1024, description="GPUs per boot")] = 1
    engine: Annotated[EngineName, Field(
        description=f"The engine every rung boots, one of: {', '.join(ENGINES)}")] = DEFAULT_ENGINE
    engine_version: Annotated[str | None, Field(
        max_length=64, description="The engine version every rung must boot with")] = None
    kv_block_size: Annotated[int, Field(
        ge=1, le=1 << 16,
        description="The engine's KV cache block size in tokens; the climb's figures are multiples of it")] = 16
    max_position_embeddings: Annotated[Tokens | None, Field(
        description="The model's positional limit; read from config.json when the model path is a local folder")] = None
    allow_long_context: Annotated[bool, Field(
        description="Climb past max_position_embeddings (sets the engine's long-context switch)")] = False
    max_num_batched_tokens_cap: Annotated[Tokens | None, Field(
        description="Stop climbing max_num_batched_tokens here")] = None
    fixed: Annotated[FixedKnobs | None, Field(description=(  # type: ignore[valid-type]
        "More serve knobs held fixed through the climb, as the engine's serve command takes them: port, enforce_eager, "
        "load_format, kv_cache_dtype, max_num_seqs, extra_flags (each --name or --name=value), env, ..."))] = None
    boot_deadline_s: Annotated[float, Field(
        gt=0, le=86400, description="How long one boot may take before it counts as timeout_boot")] = 3600
    smoke_deadline_s: Annotated[float, Field(gt=0, le=86400, description="How long one smoke test may take")] = 3600
    skip_known_good: Annotated[bool, Field(description=(
        "Do not apply the known-good entry for this model, GPU and engine version (applied by default when "
        "gpu_name and engine_version are given)"))] = False


class LadderStatusRequest(Request):
    """Every rung of a ladder and where the climb stands: the ladder file is all it needs."""


class LadderNextRequest(Request):
    """The ladder's next step, or the step that replays a past rung."""

    replay: Replay = None


class RungRunRequest(Request):
    """Boot the ladder's next rung (or replay one) on a target."""

    target: TargetName
    replay: Replay = None


class SmokeTestRequest(Request):
    """Smoke-test the rung that just booted, where its server runs."""

    target: Annotated[str, Field(
        max_length=128, description="The target the rung's server runs on; empty: the one the ladder recorded")] = ""


class RungRecordRequest(Request):
    """A boot (and or its smoke test) a person ran by hand: each as text, or as a file in the workspace."""

    log_text: Annotated[Text, Field(description="The engine's full serve log of the boot (or give log_file)")] = ""
    log_file: Annotated[WorkspaceFile, Field(
        description="The boot log as a file inside the workspace (or give log_text)")] = ""
    bench_json_text: Annotated[Text, Field(
        description="Optional: the JSON result file the engine's bench client wrote for the smoke test")] = ""
    bench_file: Annotated[WorkspaceFile, Field(description="Optional: that JSON as a file inside the workspace")] = ""


class CeilingRecordRequest(Request):
    """Record the ceiling the climb found: the ladder file is all it needs."""


class ParseBootLogRequest(Request):
    """Read one boot log into its signals."""

    text: Annotated[Text, Field(description="The engine's full serve log")]
    engine: Annotated[EngineName, Field(
        description=f"The engine that wrote the log, one of: {', '.join(ENGINES)}")] = DEFAULT_ENGINE


class JobStatusRequest(Request):
    """Where a job stands, waiting a while for it to end."""

    job_id: JobId
    wait_s: Annotated[float, Field(
        ge=0, le=WAIT_MAX_S, description="Wait up to this many seconds for the job to finish")] = 0


class JobCancelRequest(Request):
    """Cancel a running job."""

    job_id: JobId


class JobListRequest(Request):
    """The jobs of the workspace, newest first."""

    state: Annotated[JobState | None, Field(description="Only jobs in this state")] = None
    limit: Annotated[int, Field(ge=1, le=500, description="At most this many jobs")] = 20


# ---- campaigns (the campaign file is named beside the request, like the ladder file) ------------------------

ACK_FLAG = "i_understand_this_submits_jobs"


class CampaignInitRequest(Request):
    """A new campaign file, written from a campaign's fields (comments can be added by hand later)."""

    spec: Annotated[Campaign, Field(description="The campaign: name, target, model, base, workload, "
                                                "concurrencies, grid and/or cells, focus, sla, ...")]


class CampaignPlanRequest(Request):
    """Every boot and bench command a run would do, in order, after the methodology gates. Starts nothing."""

    target: Annotated[str, Field(
        max_length=128, description="Whose engine command to show; empty: the campaign's target")] = ""


class CampaignRunRequest(Request):
    """Run the campaign: boot each cell once, bench it at every concurrency, write its verdict."""

    target: Annotated[str, Field(
        max_length=128, description="Must be the campaign's target; empty: the campaign's")] = ""
    # strict: only a real true acknowledges (not "yes", not 1); anything else fails closed
    i_understand_this_submits_jobs: Annotated[bool, Field(strict=True, description=(
        "true to boot servers and bench them on the target; without it nothing starts"))] = False
    dry_run: Annotated[bool, Field(description="List every boot and bench command and start nothing")] = False
    skip_known_good: Annotated[bool, Field(description=(
        "Do not apply the known-good entry that matches the model, the target's GPU and the engine version "
        "(applied by default)"))] = False


class CampaignStatusRequest(Request):
    """Which cells are done (green or red), running or pending, and what to do next."""


class CampaignAggregateRequest(Request):
    """One table of cells x concurrencies with the focus metric and the guards."""


class ChampionSelectRequest(Request):
    """The champion under the SLA, or "no improvement"; always a DRAFT."""

    top: Annotated[int, Field(ge=1, le=50, description="How many of the best cells to list")] = 3


class CampaignReportRequest(Request):
    """Write report.md and the plots (throughput, TPOT, Pareto front) from the campaign's verdicts."""


# Every campaign operation, by its MCP tool name (the skill routes through each of them).
CAMPAIGN_OPERATIONS: dict[str, type[Request]] = {
    "campaign_init": CampaignInitRequest,
    "campaign_plan": CampaignPlanRequest,
    "campaign_run": CampaignRunRequest,
    "campaign_status": CampaignStatusRequest,
    "campaign_aggregate": CampaignAggregateRequest,
    "champion_select": ChampionSelectRequest,
    "campaign_report": CampaignReportRequest,
}

# ---- verdict rigor: A/B, baselines, known-good (the workspace is the server's, or --workspace at a terminal) ----

Metric = Literal["output_throughput", "output_throughput_per_gpu", "total_token_throughput", "median_tpot_ms",
                 "median_itl_ms", "median_ttft_ms"]
Name = Annotated[str, Field(max_length=200)]
BaselineName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$",
                                    description="The baseline's name in baselines.yml, such as llama8b-h200-prod")]


class AbRunRequest(Request):
    """Run an A/B: two or more arms on one target, interleaved A B A B ..., a clean boot per arm per trial."""

    spec: Annotated[AbSpec, Field(description=(
        "The A/B: name, target, arms (each a serve config inline, or a campaign file and cell), baseline (the arm "
        "the others are set against), workload, concurrencies, trials (>= 3 for a VERDICT), claim, metric, alpha"))]
    # strict: only a real true acknowledges (not "yes", not 1); anything else fails closed
    i_understand_this_submits_jobs: Annotated[bool, Field(strict=True, description=(
        "true to boot servers and bench them on the target; without it nothing starts"))] = False
    dry_run: Annotated[bool, Field(description="List every boot and bench command in order and start nothing")] = False
    skip_known_good: Annotated[bool, Field(description=(
        "Do not apply the known-good entry that matches the model, hardware and engine version (applied by default)"
    ))] = False


class PerfBaselineRecordRequest(Request):
    """Record a named baseline in baselines.yml from a measured result, with its full context."""

    name: BaselineName
    campaign: Annotated[WorkspaceFile, Field(description="A campaign file whose cell to record (with cell)")] = ""
    cell: Annotated[Name, Field(description="The campaign's cell")] = ""
    ab: Annotated[Name, Field(description="An A/B (its name) whose arm to record (with arm)")] = ""
    arm: Annotated[Name, Field(description="The A/B's arm")] = ""
    bench_file: Annotated[WorkspaceFile, Field(description=(
        "A `--save-result` file of the engine's bench client, in the workspace (with context)"))] = ""
    context: Annotated[ContextDescriptor | None, Field(description=(
        "With bench_file: the context that run had (model, hardware, engine version, serve, workload, regime, "
        "node)"))] = None
    note: Annotated[str, Field(max_length=2000, description="Why this is the baseline")] = ""
    replace: Annotated[bool, Field(description="Replace a baseline of this name (refused otherwise)")] = False


class PerfBaselineDiffRequest(Request):
    """Diff a result against a recorded baseline: GREEN, YELLOW or RED; refused when the contexts differ."""

    baseline: BaselineName
    campaign: Annotated[WorkspaceFile, Field(description="The current result: a campaign file (with cell)")] = ""
    cell: Annotated[Name, Field(description="The campaign's cell")] = ""
    ab: Annotated[Name, Field(description="The current result: an A/B's name (with arm)")] = ""
    arm: Annotated[Name, Field(description="The A/B's arm")] = ""
    bench_file: Annotated[WorkspaceFile, Field(description="The current result: a bench result file (with context)")] = ""
    context: Annotated[ContextDescriptor | None, Field(description="With bench_file: the context that run had")] = None
    against: Annotated[Name, Field(description="The current result: another recorded baseline, by name")] = ""
    focus: Annotated[Metric, Field(description="The metric the change is meant to improve")] = "output_throughput"
    guarded: Annotated[list[Metric], Field(max_length=8, description=(
        "Metrics that must not regress (the focus is left out of them)"))] = [
        "output_throughput", "median_tpot_ms", "median_itl_ms", "median_ttft_ms"]
    tolerance_pct: Annotated[float, Field(gt=0, le=100, description=(
        "Inside this the focus is 'no change' and a guarded metric has not regressed"))] = 3.0
    loose_band_pct: Annotated[float, Field(gt=0, le=100, description=(
        "A focus win with a guarded regression inside this band is YELLOW; beyond it, RED"))] = 10.0


class KnownGoodRecordRequest(Request):
    """Record (or update) a known-good entry: the flags a model needs on a hardware and engine version, and why."""

    model: Annotated[str, Field(max_length=4096, description="The model as served (path or hub id)")] = ""
    hardware: Annotated[Name, Field(description="The GPU name as nvidia-smi prints it, or cpu")] = ""
    engine: Annotated[EngineName, Field(description=f"One of: {', '.join(ENGINES)}")] = DEFAULT_ENGINE
    engine_version: Annotated[str, Field(max_length=64, description="The engine version it holds for")] = ""
    flags: Annotated[list[Annotated[str, Field(max_length=4096)]], Field(
        max_length=64, description="Engine flags it needs, each --name or --name=value")] = []
    env: Annotated[dict[str, str], Field(max_length=64, description="Environment it needs")] = {}
    knobs: Annotated[dict[str, Any], Field(description="Serve knobs it needs, such as {\"enforce_eager\": true}")] = {}
    why: Annotated[str, Field(max_length=2000, description="Why the model needs them (what fails without)")] = ""
    evidence: Annotated[list[Evidence], Field(max_length=32, description=(
        "What proves it: {kind: ladder_rung|ladder_ceiling|campaign_cell|ab_arm|note, ref, item, note}"))] = []
    from_ladder: Annotated[WorkspaceFile, Field(description=(
        "A ladder whose recorded ceiling becomes the entry, in one call"))] = ""
    from_campaign: Annotated[WorkspaceFile, Field(description="A campaign file whose cell becomes the entry")] = ""
    cell: Annotated[Name, Field(description="That campaign's cell (its champion)")] = ""
    from_ab: Annotated[Name, Field(description="An A/B (its name) whose arm becomes the entry")] = ""
    arm: Annotated[Name, Field(description="That A/B's arm (its champion)")] = ""


class KnownGoodLookupRequest(Request):
    """The known-good entry for a model on a hardware and engine version, if there is one."""

    model: Annotated[str, Field(min_length=1, max_length=4096, description="The model as served (path or hub id)")]
    hardware: Annotated[str, Field(min_length=1, max_length=200, description="The GPU name, or cpu")]
    engine: Annotated[EngineName, Field(description=f"One of: {', '.join(ENGINES)}")] = DEFAULT_ENGINE
    engine_version: Annotated[str, Field(min_length=1, max_length=64)]
    model_config_hash: Annotated[str, Field(max_length=80, description=(
        "sha256 of the model's config.json: finds the entry of the same model at another path"))] = ""


class KnownGoodListRequest(Request):
    """Every known-good entry, or a model's."""

    model: Annotated[str, Field(max_length=4096, description="Only this model's entries")] = ""


RIGOR_OPERATIONS: dict[str, type[Request]] = {
    "ab_run": AbRunRequest,
    "perf_baseline_record": PerfBaselineRecordRequest,
    "perf_baseline_diff": PerfBaselineDiffRequest,
    "known_good_record": KnownGoodRecordRequest,
    "known_good_lookup": KnownGoodLookupRequest,
    "known_good_list": KnownGoodListRequest,
}

# Every operation, by its MCP tool name, and the request it takes.
OPERATIONS: dict[str, type[Request]] = {
    "ladder_init": LadderInitRequest,
    "ladder_status": LadderStatusRequest,
    "ladder_next_rung": LadderNextRequest,
    "rung_run": RungRunRequest,
    "smoke_test": SmokeTestRequest,
    "rung_record": RungRecordRequest,
    "ceiling_record": CeilingRecordRequest,
    "parse_boot_log": ParseBootLogRequest,
    "job_status": JobStatusRequest,
    "job_cancel": JobCancelRequest,
    "job_list": JobListRequest,
    **CAMPAIGN_OPERATIONS,
    **RIGOR_OPERATIONS,
}
