"""One request model per operation: what the caller asks for, checked once, whichever way it came in.

    request = LadderInitRequest(model="llama8b", model_path="/models/llama8b",
                                floor_max_model_len=32768, floor_max_num_batched_tokens=8192)
    ladder_init(path, request)

The MCP tool's input schema (server/toolkit.py) and the CLI's flags (cli/flags.py) are both
generated from these fields, so a field added here reaches both; the test
tests/test_operations_agree.py fails if it does not. Two things are not part of a request,
because each surface names them its own way: the ladder or campaign file (a workspace path over MCP, a
local path at a terminal) and how long an MCP call waits for its job (`wait_s`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from redline.engines import DEFAULT_ENGINE, EngineName, detect_engine, engine_names
from redline.models.ab import AbSpec
from redline.models.bench import Count
from redline.models.campaign import Campaign
from redline.models.ladder import FixedKnobs, Policy
from redline.ops.request_base import (
    WAIT_MAX_S,
    Ack,
    JobId,
    JobState,
    ModelConfigFile,
    Replay,
    Request,
    Text,
    WorkspaceFile,
)
from redline.ops.requests_evidence import EVIDENCE_OPERATIONS
from redline.ops.requests_predict import PREDICT_OPERATIONS


class LadderInitRequest(Request):
    """A new ladder: the model, the known-good boot it climbs from, and what the climb holds fixed."""

    model: Annotated[
        str, Field(min_length=1, max_length=200, description="A short key for the model, such as llama-3.1-8b")
    ]
    model_path: Annotated[
        str,
        Field(
            min_length=1,
            max_length=4096,
            description="The model as the engine's serve command takes it: a path or hub id",
        ),
    ]
    floor_max_model_len: Annotated[
        Count, Field(description="max_model_len of a boot known to work; the climb starts here")
    ]
    floor_max_num_batched_tokens: Annotated[Count, Field(description="max_num_batched_tokens of that known-good boot")]
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, description="Held fixed through the climb")] = 0.9
    min_concurrency: Annotated[
        int, Field(ge=1, le=1 << 16, description="Max-length requests the ceiling must hold at once")
    ] = 1
    policy: Annotated[
        Policy,
        Field(
            description=(
                "predict: from the floor's boot, one rung at the whole ceiling the memory model predicts, then one "
                "knob at a time if it fails; signal: next rung from the KV figures the boot log gives; doubling: "
                "double each time"
            )
        ),
    ] = "predict"
    gpu_name: Annotated[
        str | None,
        Field(
            max_length=200,
            description="The GPU's name, such as NVIDIA H200 (else read from the first boot's host)",
        ),
    ] = None
    gpu_memory_gib: Annotated[
        float | None,
        Field(gt=0, le=1 << 20, description="The GPU's memory in GiB (else read from the first boot's host)"),
    ] = None
    gpu_count: Annotated[int, Field(ge=1, le=1024, description="GPUs per boot")] = 1
    engine: Annotated[
        EngineName, Field(description=f"The engine every rung boots, one of: {', '.join(engine_names())}")
    ] = DEFAULT_ENGINE
    engine_version: Annotated[
        str | None, Field(max_length=64, description="The engine version every rung must boot with")
    ] = None
    kv_block_size: Annotated[
        int,
        Field(
            ge=1,
            le=1 << 16,
            description="The engine's KV cache block size in tokens; the climb's figures are multiples of it",
        ),
    ] = 16
    max_position_embeddings: Annotated[
        Count | None,
        Field(description="The model's positional limit; read from config.json when the model path is a local folder"),
    ] = None
    model_config_file: ModelConfigFile = None
    allow_long_context: Annotated[
        bool, Field(description="Climb past max_position_embeddings (sets the engine's long-context switch)")
    ] = False
    target_max_num_batched_tokens: Annotated[
        Count | None,
        Field(
            description=(
                "predict: the max_num_batched_tokens the ceiling keeps while max_model_len takes the rest "
                "(default: the engine's default chunk, 8192)"
            )
        ),
    ] = None
    deployment_compile_cache: Annotated[
        Literal["cold", "warm"] | None,
        Field(
            description="The torch.compile cache a deployment of the ceiling boots with, which the ceiling is "
            "proven in: cold (a fresh deployment compiles, and holds a smaller KV cache), or warm (its cache "
            "persists between boots). Default: what the target says (its compile_cache_persists), else cold"
        ),
    ] = None
    max_num_batched_tokens_cap: Annotated[
        Count | None, Field(description="Stop climbing max_num_batched_tokens here")
    ] = None
    fixed: Annotated[
        FixedKnobs | None,
        Field(
            description=(
                "More serve knobs held fixed through the climb, as the engine's serve command takes them: "
                "port, enforce_eager, load_format, kv_cache_dtype, max_num_seqs, "
                "extra_flags (each --name or --name=value), env, ..."
            )
        ),
    ] = None
    boot_deadline_s: Annotated[
        float, Field(gt=0, le=86400, description="How long one boot may take before it counts as timeout_boot")
    ] = 3600
    smoke_deadline_s: Annotated[float, Field(gt=0, le=86400, description="How long one smoke test may take")] = 3600
    skip_known_good: Annotated[
        bool,
        Field(
            description=(
                "Do not apply the known-good entry for this model, GPU and engine version (applied by default when "
                "gpu_name and engine_version are given)"
            )
        ),
    ] = False


class LadderStatusRequest(Request):
    """Every rung of a ladder and where the climb stands: the ladder file is all it needs."""


class LadderNextRequest(Request):
    """The ladder's next step, or the step that replays a past rung."""

    replay: Replay = None


class RungRunRequest(Request):
    """Boot the ladder's next rung (or replay one) on a target."""

    target: Annotated[
        str, Field(min_length=1, max_length=128, description="A target name from the targets file, such as local")
    ]
    replay: Replay = None
    i_understand_this_submits_jobs: Annotated[
        bool,
        Field(
            strict=True,
            description="true to boot on a target that submits to a cluster (kubernetes); other targets need none",
        ),
    ] = False


class SmokeTestRequest(Request):
    """Smoke-test the rung that just booted, where its server runs."""

    target: Annotated[
        str,
        Field(max_length=128, description="The target the rung's server runs on; empty: the one the ladder recorded"),
    ] = ""


class RungRecordRequest(Request):
    """A boot (and or its smoke test) a person ran by hand: each as text, or as a file in the workspace."""

    log_text: Annotated[Text, Field(description="The engine's full serve log of the boot (or give log_file)")] = ""
    log_file: Annotated[
        WorkspaceFile, Field(description="The boot log as a file inside the workspace (or give log_text)")
    ] = ""
    bench_json_text: Annotated[
        Text, Field(description="Optional: the JSON result file the engine's bench client wrote for the smoke test")
    ] = ""
    bench_file: Annotated[WorkspaceFile, Field(description="Optional: that JSON as a file inside the workspace")] = ""
    model_config_file: ModelConfigFile = None


class CeilingRecordRequest(Request):
    """Record the ceiling the climb found: the ladder file is all it needs."""


class LadderAdoptRequest(Request):
    """Copy a ladder climbed elsewhere (its ladder.yml and the rung files it names) into the workspace."""

    source: Annotated[
        str,
        Field(
            min_length=1,
            max_length=4096,
            description=(
                "The ladder file to adopt, with its <stem>.runs folder beside it: a path inside the workspace, or an "
                "absolute path under a folder the server config's adopt_from names"
            ),
        ),
    ]
    name: Annotated[
        str,
        Field(
            max_length=200,
            pattern=r"^([A-Za-z0-9][A-Za-z0-9._-]*)?$",
            description="Its name in the workspace: it becomes ladders/<name>.yml; empty: the ladder's model key",
        ),
    ] = ""

    @field_validator("name")
    @classmethod
    def _without_suffix(cls, name: str) -> str:
        """A name given as a file name (llama8b.yml) is the same name."""
        return name.removesuffix(".yml").removesuffix(".yaml")


AUTO = "auto"


class ParseBootLogRequest(Request):
    """Read one boot log into its signals; the engine is told from the log unless named."""

    text: Annotated[Text, Field(description="The engine's full serve log")]
    engine: Annotated[
        Literal["auto"] | EngineName,
        Field(
            validate_default=True,
            description=(
                f"The engine that wrote the log, one of: {', '.join(engine_names())}; "
                f"auto: told from the log ({DEFAULT_ENGINE} when it shows neither)"
            ),
        ),
    ] = AUTO

    @field_validator("engine")
    @classmethod
    def _told_from_the_log(cls, engine: str, info: ValidationInfo) -> str:
        """auto: the engine whose own lines the log holds (engines/detect.py); the default engine when it holds
        none, whose reader then says what the text lacks."""
        if engine != AUTO:
            return engine
        return detect_engine(info.data.get("text", "")) or DEFAULT_ENGINE


class JobStatusRequest(Request):
    """Where a job stands, waiting a while for it to end."""

    job_id: JobId
    wait_s: Annotated[
        float, Field(ge=0, le=WAIT_MAX_S, description="Wait up to this many seconds for the job to finish")
    ] = 0


class JobCancelRequest(Request):
    """Cancel a running job."""

    job_id: JobId


class JobListRequest(Request):
    """The jobs of the workspace, newest first."""

    state: Annotated[JobState | None, Field(description="Only jobs in this state")] = None
    limit: Annotated[int, Field(ge=1, le=500, description="At most this many jobs")] = 20


# ---- campaigns (the campaign file is named beside the request, like the ladder file) ------------------------


class CampaignInitRequest(Request):
    """A new campaign file, written from a campaign's fields (comments can be added by hand later)."""

    spec: Annotated[
        Campaign,
        Field(
            description="The campaign: name, target, model, base, workload (or several named workloads and how "
            "a champion across them is named: combine), concurrencies, grid and/or cells, focus, sla, ..."
        ),
    ]


class CampaignPlanRequest(Request):
    """Every boot and bench command a run would do, in order, after the methodology gates. Starts nothing."""

    target: Annotated[
        str, Field(max_length=128, description="Whose engine command to show; empty: the campaign's target")
    ] = ""


class ExperimentRunRequest(Request):
    """What every experiment's run takes (a campaign's, an A/B's): the acknowledgement, the dry run, the known-good
    entry's skip."""

    i_understand_this_submits_jobs: Ack = False
    dry_run: Annotated[bool, Field(description="List every boot and bench command in order and start nothing")] = False
    skip_known_good: Annotated[
        bool,
        Field(
            description=(
                "Do not apply the known-good entry that matches the model, the target's GPU and the engine version "
                "(applied by default)"
            )
        ),
    ] = False

    def run_args(self) -> dict[str, bool]:
        """What every experiment's run function takes of it, by name: the acknowledgement, dry_run, skip_known_good."""
        return {name: getattr(self, name) for name in ExperimentRunRequest.model_fields}


class CampaignRunRequest(ExperimentRunRequest):
    """Run the campaign: boot each cell once, bench it at every concurrency, write its verdict."""

    target: Annotated[
        str, Field(max_length=128, description="Must be the campaign's target; empty: the campaign's")
    ] = ""


class AbRunRequest(ExperimentRunRequest):
    """Run an A/B: two or more arms on one target, interleaved A B A B ..., a clean boot per arm per trial."""

    spec: Annotated[
        AbSpec,
        Field(
            description=(
                "The A/B: name, target, arms (each a serve config inline, or a campaign file and cell), "
                "baseline (the arm the others are set against), workload, concurrencies, "
                "trials (>= 3 for a VERDICT), claim, metric, alpha"
            )
        ),
    ]


class CampaignStatusRequest(Request):
    """Which cells are done (green or red), running or pending, and what to do next."""


class CampaignAggregateRequest(Request):
    """One table of cells x concurrencies with the focus metric and the guards."""


class ChampionSelectRequest(Request):
    """The champion under the SLA, or "no improvement"; always a DRAFT."""

    top: Annotated[int, Field(ge=1, le=50, description="How many of the best cells to list")] = 3


class CampaignReportRequest(Request):
    """Write report.md and the plots (throughput, TPOT, Pareto front) from the campaign's verdicts."""


# Every experiment operation, by its MCP tool name (the skills route through each of them).
EXPERIMENT_OPERATIONS: dict[str, type[Request]] = {
    "campaign_init": CampaignInitRequest,
    "campaign_plan": CampaignPlanRequest,
    "campaign_run": CampaignRunRequest,
    "campaign_status": CampaignStatusRequest,
    "campaign_aggregate": CampaignAggregateRequest,
    "champion_select": ChampionSelectRequest,
    "campaign_report": CampaignReportRequest,
    "ab_run": AbRunRequest,
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
    "ladder_adopt": LadderAdoptRequest,
    "parse_boot_log": ParseBootLogRequest,
    "job_status": JobStatusRequest,
    "job_cancel": JobCancelRequest,
    "job_list": JobListRequest,
    **EXPERIMENT_OPERATIONS,
    **EVIDENCE_OPERATIONS,
    **PREDICT_OPERATIONS,
}
