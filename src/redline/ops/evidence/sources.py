"""A measured result named by where it lives: a campaign cell, an A/B arm, a bench result file (with the context
given beside it), or a recorded baseline. Each becomes points (one per concurrency), each with its full context.

    found = resolve_ref(workspace, ResultRef(campaign="campaigns/c1.yml", cell="mnbt8192"))
    found.points        # BaselinePoint per concurrency: context, metrics (mean ± std), % of SoL
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from redline.engines import get_engine
from redline.errors import InputError
from redline.inputs import read_text
from redline.ledger.baselines_file import read_baselines
from redline.models.baseline import BaselinePoint, BaselineSource
from redline.models.campaign_results import CellVerdict, ConcurrencyResult
from redline.models.context import (
    ContextDescriptor,
    Workload,
)
from redline.models.metrics import Band
from redline.models.serve import ServeConfig
from redline.ops.ab_read import ab_arms
from redline.ops.campaign_read import campaign_boots, load_named
from redline.ops.evidence.context import local_model_files, quantization_of
from redline.ops.evidence.sol import sol_figure
from redline.ops.requests_evidence import NamedResultRequest
from redline.ops.workspace import inside, relative
from redline.policy.ab import trial_metrics
from redline.policy.ab_guards import points_of
from redline.policy.champion import read_cells
from redline.policy.figures import stat


class ResultRef(BaseModel):
    """Exactly one of: campaign + cell, ab + arm, bench_file + context, baseline."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    campaign: str = ""
    cell: str = ""
    ab: str = ""
    arm: str = ""
    bench_file: str = ""
    context: ContextDescriptor | None = None
    baseline: str = ""

    @classmethod
    def named(cls, r: NamedResultRequest, baseline: str = "") -> ResultRef:
        """The result a request names (`baseline`: or a recorded baseline, by name)."""
        named = {"campaign": r.campaign, "cell": r.cell, "ab": r.ab, "arm": r.arm, "bench_file": r.bench_file}
        return cls(**named, context=r.context, baseline=baseline)

    def kind(self) -> str:
        given = [
            k
            for k, on in (
                ("campaign_cell", self.campaign or self.cell),
                ("ab_arm", self.ab or self.arm),
                ("bench_file", self.bench_file),
                ("baseline", self.baseline),
            )
            if on
        ]
        if len(given) != 1:
            raise InputError(
                "name one result: campaign and cell, ab and arm, bench_file (with context), or baseline"
                + (f"; got {', '.join(given)}" if given else "")
            )
        return given[0]


@dataclass(frozen=True)
class Resolved:
    """A result's points, and each metric's band measured between the boots behind them (a campaign cell's: its
    campaign's; empty where none was, as an A/B arm's trials carry their own spread)."""

    source: BaselineSource
    serve: ServeConfig
    points: list[BaselinePoint]
    noise: dict[str, Band] = field(default_factory=dict)


# ---- a campaign cell ------------------------------------------------------------------------------------------


def cell_context(verdict: CellVerdict, result: ConcurrencyResult) -> ContextDescriptor:
    """A campaign cell's context at one concurrency. A verdict written before the run recorded the model's
    identity gets it here from the model's config.json, where that folder is readable (else it stays unknown)."""
    context = verdict.context_at(result)
    if context.model.config_hash is not None:
        return context
    files = local_model_files(context.model.name)
    dtype = (files.config or {}).get("torch_dtype")
    model = context.model.model_copy(
        update={
            "config_hash": files.config_hash,
            "quantization": quantization_of(context.serve, files),
            "dtype": str(dtype) if dtype else None,
        }
    )
    return context.model_copy(update={"model": model})


def _with_sol(context: ContextDescriptor, metrics: dict, model: str) -> BaselinePoint:  # type: ignore[type-arg]
    shape, why = local_model_files(model).shape
    tp = metrics["output_throughput"].mean if "output_throughput" in metrics else None
    return BaselinePoint(context=context, metrics=metrics, sol=sol_figure(context, shape, tp, why))


def from_cell(workspace: Path, campaign: str, cell: str) -> Resolved:
    """A campaign cell as champion_select reads it: each figure over its boots where the campaign measured a band
    between boots (or earlier boots of its setup did), with each metric's band."""
    loaded = load_named(workspace, campaign, "campaign")
    path = loaded.path
    boots = campaign_boots(loaded)
    if cell not in boots.verdicts:
        raise InputError(
            f"campaign {campaign}: cell {cell!r} has no verdict (cells: {', '.join(loaded.names)}); "
            "run the campaign first"
        )
    read, noise = read_cells(loaded.campaign, boots.verdicts, boots.replicates, boots.earlier)
    verdict = read[cell]
    points = [
        _with_sol(cell_context(verdict, r), dict(r.metrics), verdict.context.model.name)
        for r in verdict.results
        if r.ok and r.metrics
    ]
    if not points:
        raise InputError(
            f"campaign {campaign}: cell {cell!r} has no concurrency whose every request completed ({verdict.reason})"
        )
    return Resolved(
        BaselineSource(kind="campaign_cell", ref=relative(workspace, path), item=cell),
        verdict.context.serve,
        points,
        dict(noise),
    )


# ---- an A/B arm, a bench file, a baseline --------------------------------------------------------------------------


def from_ab(workspace: Path, ab: str, arm: str) -> Resolved:
    spec, arms, _ = ab_arms(workspace, ab)
    summary = next((a for a in arms if a.arm == arm), None)
    if summary is None:
        raise InputError(f"A/B {ab!r} has no arm {arm!r}; its arms are {', '.join(a.arm for a in arms)}")
    if not summary.points:
        raise InputError(f"A/B {ab!r}: arm {arm!r} has no successful trial ({'; '.join(summary.trials_failed)})")
    points = points_of(summary)  # as the A/B's own guards take it (policy/ab_guards.py)
    return Resolved(BaselineSource(kind="ab_arm", ref=f"ab/{spec.name}.yml", item=arm), summary.serve, points)


def _bench_workload(context: ContextDescriptor, concurrency: int | None, prompts: int) -> Workload:
    w = context.workload
    wrong = [
        f"{name} {given} (the file says {found})"
        for name, given, found in (("concurrency", w.concurrency, concurrency), ("num_prompts", w.num_prompts, prompts))
        if given is not None and found is not None and given != found
    ]
    if wrong:
        raise InputError(f"the context given does not match the bench file: {'; '.join(wrong)}; fix the context")
    return w.model_copy(update={"concurrency": w.concurrency or concurrency, "num_prompts": w.num_prompts or prompts})


def from_bench_file(workspace: Path, bench_file: str, context: ContextDescriptor | None) -> Resolved:
    if context is None:
        raise InputError(
            "a bench result file says nothing of its context: give context (the model, hardware, engine "
            "version, serve config, workload, regime, node the run had) beside bench_file"
        )
    path = inside(workspace, bench_file, "bench_file", example="bench/result.json")
    result = get_engine(context.engine.name).parse_bench_result(read_text(path, f"bench_file {bench_file}"))
    if not result.all_completed:
        raise InputError(
            f"bench_file {bench_file}: {result.failed} of {result.num_prompts} requests failed; a "
            "result with failed requests is not a baseline"
        )
    files = local_model_files(context.model.name)
    model = (
        context.model
        if context.model.config_hash or not files.config_hash
        else context.model.model_copy(update={"config_hash": files.config_hash})
    )  # the hash, where the folder is here
    ctx = context.model_copy(
        update={"model": model, "workload": _bench_workload(context, result.max_concurrency, result.num_prompts)}
    )
    metrics = {k: stat([v]) for k, v in trial_metrics(result, ctx.serve).items()}
    return Resolved(
        BaselineSource(kind="bench_file", ref=relative(workspace, path)),
        ctx.serve,
        [_with_sol(ctx, metrics, ctx.model.name)],
    )


def from_baseline(workspace: Path, name: str) -> Resolved:
    found = read_baselines(workspace).baselines.get(name)
    if found is None:
        raise InputError(f"no baseline named {name!r} in baselines.yml; perf_baseline_record makes one")
    source = BaselineSource(kind="baseline", ref=name)
    return Resolved(source, found.points[0].context.serve, list(found.points), dict(found.noise))


def resolve_ref(workspace: Path, ref: ResultRef) -> Resolved:
    kind = ref.kind()
    if kind == "campaign_cell":
        if not (ref.campaign and ref.cell):
            raise InputError("a campaign cell needs both campaign (the file) and cell")
        return from_cell(workspace, ref.campaign, ref.cell)
    if kind == "ab_arm":
        if not (ref.ab and ref.arm):
            raise InputError("an A/B arm needs both ab (the A/B's name) and arm")
        return from_ab(workspace, ref.ab, ref.arm)
    if kind == "bench_file":
        return from_bench_file(workspace, ref.bench_file, ref.context)
    return from_baseline(workspace, ref.baseline)


__all__ = ["ResultRef", "Resolved", "cell_context", "resolve_ref"]
