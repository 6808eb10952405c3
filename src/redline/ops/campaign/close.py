"""The close of champion_select: the next levers worth trying, and whether the champion is closed.

    report = close_champion(report, verdicts, workspace)   # the hook ops/campaign/results.py champion_select calls

A champion is closed only when a same-node A/B made it a VERDICT (and, where it turns on a lever that can change the
model's answers, that A/B's accuracy gate passed), its known-good config is recorded, and a
next lever is named; until then `close.missing` says what is, each with the call to make. The levers come
from the champion's (or, with none, the baseline's) config and its top concurrency's % of speed-of-light.
"""

from __future__ import annotations

from pathlib import Path

from redline.models.campaign_results import CellVerdict, ChampionReport
from redline.models.lever import CloseStatus, Lever
from redline.ops.evidence.context import local_model_files
from redline.ops.evidence.frontier import frontier_for
from redline.ops.evidence.known_good_apply import recorded_for, registry_path
from redline.ops.evidence.sol import sol_figure
from redline.ops.evidence.sources import cell_context
from redline.policy.accuracy import gate_missing
from redline.policy.close import close_status
from redline.policy.frontier import open_levers, under_of
from redline.policy.known_good import hardware_key
from redline.policy.levers import LeverInput, next_levers
from redline.policy.quality_risk import quality_risks

CLAIM = {"latency": "latency", "throughput": "throughput", "goodput": "throughput", "slo_goodput": "throughput"}


def lever_input(focus: str, verdict: CellVerdict, ceiling: int | None = None) -> LeverInput:
    """What the lever rules look at for a cell: its config, its top concurrency's % of the decode ceiling, the host
    it ran on, the KV tokens its boot reported, the workload's lengths, the ladder's ceiling."""
    done = [r for r in verdict.results if r.ok and r.metrics and r.concurrency is not None]  # SoL: a known batch
    sol = None
    quantization = None
    if done:
        top = max(done, key=lambda r: r.concurrency or 0)
        context = cell_context(verdict, top)
        quantization = context.model.quantization
        shape, why = local_model_files(context.model.name).shape
        tp = top.metrics["output_throughput"].mean if "output_throughput" in top.metrics else None
        sol = sol_figure(context, shape, tp, why)
    shapes = list(verdict.workloads.values()) or [verdict.context.workload]
    tokens = [t for w in shapes if (t := w.tokens) is not None]
    return LeverInput(
        claim=CLAIM[focus],
        serve=verdict.context.serve,
        concurrencies=sorted({r.concurrency for r in verdict.results if r.concurrency is not None}) or [1],
        sol=sol,
        quantization=quantization,
        hardware=hardware_key(verdict.context.hardware.gpu_name),
        kv_tokens=verdict.boot.signals.kv_cache_tokens,
        tokens_per_request=max(tokens) if tokens and len(tokens) == len(shapes) else None,
        batched_tokens_ceiling=ceiling,
    )


def cell_levers(focus: str, verdict: CellVerdict, ceiling: int | None = None) -> list[Lever]:
    """The next levers from a cell's config and its top concurrency's % of the decode ceiling, grounded in its host,
    its boot's KV tokens and the ladder's ceiling."""
    return next_levers(lever_input(focus, verdict, ceiling))


def champion_close(
    report: ChampionReport,
    verdict: CellVerdict | None,
    levers: list[Lever],
    registry: Path,
    baseline: CellVerdict | None = None,
) -> CloseStatus | None:
    """The champion's close; `baseline`: the baseline cell's verdict, against which a lever that can change the
    model's answers is named (its accuracy gate runs in the A/B that confirms the champion)."""
    if report.champion is None or verdict is None:
        return None
    ctx = verdict.context
    entry = recorded_for(
        ctx.serve,
        registry,
        hardware=hardware_key(ctx.hardware.gpu_name),
        engine=ctx.engine.name,
        engine_version=ctx.engine.version,
        config_hash=ctx.model.config_hash or local_model_files(ctx.model.name).config_hash,
    )
    draft = (
        f"a VERDICT: a same-node A/B of {report.champion!r} against {report.baseline!r} (ab_run with the "
        "campaign's cells as arms, 3 trials or more)"
    )  # a campaign's champion is always a DRAFT
    record_with = f"from_campaign and cell={report.champion}"
    base = baseline.context.serve if baseline is not None else None
    return close_status(
        report.champion,
        verdict_missing=draft,
        entry=entry,
        record_with=record_with,
        levers=levers,
        accuracy_missing=gate_missing(quality_risks(ctx.serve, base), None),  # the A/B's gate: a campaign runs none
    )


def close_champion(
    report: ChampionReport, verdicts: dict[str, CellVerdict], workspace: Path, ceiling: int | None = None
) -> ChampionReport:
    """The report with the next levers and the champion's close status at its end; `ceiling`: the campaign's
    ladder's max_num_batched_tokens (ops/campaign_read.py ladder_ceiling), above which no lever goes. A lever an
    A/B already judged on this model, hardware and engine version (the workspace's frontier.yml) is left out."""
    chosen = verdicts.get(report.champion or report.baseline)
    levers: list[Lever] = []
    if chosen is not None:  # where the cell ran: a lever judged only elsewhere (eager, lower c) is proposed again
        said = lever_input(report.focus, chosen, ceiling)
        under = under_of(chosen.context.regime.graphs, said.concurrencies, said.tokens_per_request)
        levers = open_levers(next_levers(said), frontier_for(workspace, chosen.context), under)
    champion, baseline = verdicts.get(report.champion or ""), verdicts.get(report.baseline or "")
    close = champion_close(report, champion, levers, registry_path(workspace), baseline)
    return report.model_copy(update={"close": close, "next_levers": levers})


__all__ = ["cell_levers", "champion_close", "close_champion", "lever_input"]
