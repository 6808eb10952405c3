"""The requests of the evidence operations: baselines, the known-good registry, the lever frontier, the write-back."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from redline.engines import DEFAULT_ENGINE, EngineName, engine_names
from redline.models.ab import Metric
from redline.models.context import ContextDescriptor, Name
from redline.models.known_good import Evidence
from redline.models.slug import slug_of
from redline.ops.request_base import Request, WorkspaceFile

# ---- evidence: baselines, known-good, the frontier (the workspace is the server's, or --workspace at a terminal) ----

# names that become a file or folder name (ab/<name>.yml, cells/<cell>/): slugs, "" when not given
AbName = Annotated[str, Field(max_length=1024), slug_of("A/B")]
CellName = Annotated[str, Field(max_length=1024), slug_of("cell")]
ArmName = Annotated[str, Field(max_length=1024), slug_of("arm")]
BaselineRef = Annotated[str, Field(max_length=1024), slug_of("baseline")]
BaselineName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[a-z0-9][a-z0-9._-]*$",
        description="The baseline's name in baselines.yml, such as llama8b-h200-prod",
    ),
]


class NamedResultRequest(Request):
    """A request naming one measured result: a campaign's cell, an A/B's arm, or a bench result file with its
    context (ops/evidence/sources.py ResultRef)."""

    campaign: Annotated[WorkspaceFile, Field(description="A campaign file whose cell is the result (with cell)")] = ""
    cell: Annotated[CellName, Field(description="The campaign's cell")] = ""
    ab: Annotated[AbName, Field(description="An A/B (its name) whose arm is the result (with arm)")] = ""
    arm: Annotated[ArmName, Field(description="The A/B's arm")] = ""
    bench_file: Annotated[
        WorkspaceFile,
        Field(description="A `--save-result` file of the engine's bench client, in the workspace (with context)"),
    ] = ""
    context: Annotated[
        ContextDescriptor | None,
        Field(
            description=(
                "With bench_file: the context that run had (model, hardware, engine version, serve, workload, regime, "
                "node)"
            )
        ),
    ] = None


class PerfBaselineRecordRequest(NamedResultRequest):
    """Record a named baseline in baselines.yml from a measured result, with its full context."""

    name: BaselineName
    note: Annotated[str, Field(max_length=2000, description="Why this is the baseline")] = ""
    replace: Annotated[bool, Field(description="Replace a baseline of this name (refused otherwise)")] = False


ArgsKey = Annotated[
    str,
    Field(
        max_length=200,
        pattern=r"^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$",
        description=(
            "Where the engine's arguments are in the values file, keys joined by dots; default: the champion's "
            "engine's list (ENGINE.extraArgs)"
        ),
    ),
]


class ChampionApplyRequest(Request):
    """Write a closed champion's flags into a deploy's values file, and record it as the new baseline."""

    ab: Annotated[AbName, Field(min_length=1, description="The A/B whose champion to write back (it must be closed)")]
    values: Annotated[WorkspaceFile, Field(min_length=1, description="The deploy's Helm values file, in the workspace")]
    args_key: ArgsKey = ""
    baseline: BaselineName
    dry_run: Annotated[bool, Field(description="Answer the diff it would write, and write nothing")] = False
    expect: Annotated[
        str,
        Field(
            max_length=64,
            description="The diff_id of the dry run whose diff you read: written only while it is still that diff",
        ),
    ] = ""
    i_understand_this_writes_the_deploy: Annotated[
        bool, Field(strict=True, description="true to write the values file (after a dry run); without it nothing is")
    ] = False


class LeverFrontierRequest(Request):
    """The lever frontier: the levers tried per model, hardware and engine version, and those not tried yet."""

    model: Annotated[
        Name, Field(description="One model's frontiers (its path or hub id, as runs name it); all if empty")
    ] = ""


class PerfBaselineDiffRequest(NamedResultRequest):
    """Diff a result against a recorded baseline: GREEN, YELLOW or RED; refused when the contexts differ. The current
    result: a campaign's cell, an A/B's arm, a bench file (with context), or another recorded baseline (against)."""

    baseline: BaselineName
    against: Annotated[BaselineRef, Field(description="The current result: another recorded baseline, by name")] = ""
    focus: Annotated[Metric, Field(description="The metric the change is meant to improve")] = "output_throughput"
    guarded: Annotated[
        list[Metric], Field(max_length=8, description=("Metrics that must not regress (the focus is left out of them)"))
    ] = ["output_throughput", "median_tpot_ms", "median_itl_ms", "median_ttft_ms"]
    tolerance_pct: Annotated[
        float,
        Field(
            gt=0, le=100, description=("Inside this the focus is 'no change' and a guarded metric has not regressed")
        ),
    ] = 3.0
    loose_band_pct: Annotated[
        float,
        Field(
            gt=0,
            le=100,
            description=("A focus win with a guarded regression inside this band is YELLOW; beyond it, RED"),
        ),
    ] = 10.0


class KnownGoodRecordRequest(Request):
    """Record (or update) a known-good entry: the flags a model needs on a hardware and engine version, and why."""

    model: Annotated[str, Field(max_length=4096, description="The model as served (path or hub id)")] = ""
    hardware: Annotated[Name, Field(description="The GPU name as nvidia-smi prints it, or cpu")] = ""
    engine: Annotated[EngineName, Field(description=f"One of: {', '.join(engine_names())}")] = DEFAULT_ENGINE
    engine_version: Annotated[str, Field(max_length=64, description="The engine version it holds for")] = ""
    flags: Annotated[
        list[Annotated[str, Field(max_length=4096)]],
        Field(max_length=64, description="Engine flags it needs, each --name or --name=value"),
    ] = []
    env: Annotated[dict[str, str], Field(max_length=64, description="Environment it needs")] = {}
    knobs: Annotated[dict[str, Any], Field(description='Serve knobs it needs, such as {"enforce_eager": true}')] = {}
    why: Annotated[str, Field(max_length=2000, description="Why the model needs them (what fails without)")] = ""
    evidence: Annotated[
        list[Evidence],
        Field(
            max_length=32,
            description=(
                "What proves it: {kind: ladder_rung|ladder_ceiling|campaign_cell|ab_arm|note, ref, item, note}"
            ),
        ),
    ] = []
    keep_knobs: Annotated[
        list[Annotated[str, Field(max_length=64)]],
        Field(
            max_length=32,
            description=(
                "With from_campaign or from_ab: the knobs of that config the model needs, kept at its values (and "
                "only those); without it the entry keeps the knobs the campaign or A/B file set, never a gate's pin "
                "(max_num_seqs pinned to the top concurrency) or a bench setting"
            ),
        ),
    ] = []
    from_ladder: Annotated[
        WorkspaceFile, Field(description=("A ladder whose recorded ceiling becomes the entry, in one call"))
    ] = ""
    from_campaign: Annotated[WorkspaceFile, Field(description="A campaign file whose cell becomes the entry")] = ""
    cell: Annotated[CellName, Field(description="That campaign's cell (its champion)")] = ""
    from_ab: Annotated[AbName, Field(description="An A/B (its name) whose arm becomes the entry")] = ""
    arm: Annotated[ArmName, Field(description="That A/B's arm (its champion)")] = ""


class KnownGoodLookupRequest(Request):
    """The known-good entry for a model on a hardware and engine version, if there is one."""

    model: Annotated[str, Field(min_length=1, max_length=4096, description="The model as served (path or hub id)")]
    hardware: Annotated[str, Field(min_length=1, max_length=200, description="The GPU name, or cpu")]
    engine: Annotated[EngineName, Field(description=f"One of: {', '.join(engine_names())}")] = DEFAULT_ENGINE
    engine_version: Annotated[str, Field(min_length=1, max_length=64)]
    model_config_hash: Annotated[
        str,
        Field(
            max_length=80,
            description=("sha256 of the model's config.json: finds the entry of the same model at another path"),
        ),
    ] = ""


class KnownGoodListRequest(Request):
    """Every known-good entry, or a model's."""

    model: Annotated[str, Field(max_length=4096, description="Only this model's entries")] = ""


KnownGoodVerb = Literal["record", "lookup", "list"]


class KnownGoodConfigRequest(KnownGoodRecordRequest):
    """The known-good registry in one tool, as the design card names it: a verb (record, lookup or list) and that
    verb's fields, answered by the same operation as known_good_record, known_good_lookup or known_good_list."""

    verb: Annotated[
        KnownGoodVerb,
        Field(
            description=(
                "record: an entry from the fields below (or from_ladder, from_campaign with cell, from_ab with arm); "
                "lookup: the entry for model, hardware, engine and engine_version; list: every entry (or model's)"
            )
        ),
    ]
    model_config_hash: Annotated[
        str,
        Field(
            max_length=80,
            description=(
                "lookup: sha256 of the model's config.json, finds the entry of the same model at another path"
            ),
        ),
    ] = ""


KNOWN_GOOD_VERBS: dict[str, type[Request]] = {
    "record": KnownGoodRecordRequest,
    "lookup": KnownGoodLookupRequest,
    "list": KnownGoodListRequest,
}

EVIDENCE_OPERATIONS: dict[str, type[Request]] = {
    "perf_baseline_record": PerfBaselineRecordRequest,
    "perf_baseline_diff": PerfBaselineDiffRequest,
    "known_good_record": KnownGoodRecordRequest,
    "known_good_lookup": KnownGoodLookupRequest,
    "known_good_list": KnownGoodListRequest,
    "known_good_config": KnownGoodConfigRequest,
    "champion_apply": ChampionApplyRequest,
    "lever_frontier": LeverFrontierRequest,
}
