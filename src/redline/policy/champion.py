"""A campaign's figures and what they make, as pure functions of its verdicts: no I/O here.

    verdict, reason = cell_verdict(campaign, ...)               # green or red
    table = campaign_table(campaign, cells, verdicts)    # cells x concurrencies, the focus metric and the guards
    report = select_champion(campaign, cells, baseline, verdicts, top=3)

A cell the one noise model (policy/noise.py) cannot tell from the baseline is "no improvement", never a win;
each ranked cell says the basis of that call and the smallest effect it could have detected; a cell whose focus
figure is implausible is not ranked; results of different regimes are never ranked together; every champion is a
DRAFT.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from redline.errors import InputError
from redline.models.baseline import BaselinePoint
from redline.models.campaign import FOCUS_METRIC, Campaign, Verdict
from redline.models.campaign_results import (
    CampaignTable,
    CellVerdict,
    ChampionReport,
    ConcurrencyResult,
    RankedCell,
    RegimeGroup,
    SlaCheck,
    Stat,
    TableRow,
)
from redline.models.context import device_of
from redline.models.load import Load, kind_said, load_of
from redline.models.metrics import DIRECTIONS, MetricFlag
from redline.policy.ab_guards import compared
from redline.policy.boots import Noise, Replicates, blind, campaign_noise, fallback, over_boots
from redline.policy.noise import DEFAULT_BAND_PCT, detectable
from redline.policy.ranking import base_of, cell_flags, rank

DEFAULT_NOISE_BAND_PCT = DEFAULT_BAND_PCT  # METHODOLOGY.md: the band where no trials give a spread
DRAFT_NOTE = (
    "DRAFT: each cell is one boot on one node; confirm the champion with a same-node A/B of at least "
    "3 trials in a matched regime before calling it a VERDICT"
)


# ---- figures and verdicts ----------------------------------------------------------------------------------


def sla_checks(metrics: dict[str, Stat], sla: dict[str, float]) -> list[SlaCheck]:
    checks = []
    for metric, limit in sla.items():
        value = metrics[metric].mean if metric in metrics else None
        kind: Literal["max", "min"] = "max" if DIRECTIONS[metric] == "lower" else "min"
        ok = value is not None and (value <= limit if kind == "max" else value >= limit)
        checks.append(SlaCheck(metric=metric, limit=limit, kind=kind, value=value, ok=ok))
    return checks


def _breach(check: SlaCheck) -> str:
    if check.value is None:
        return f"{check.metric} was not measured"
    sign = ">" if check.kind == "max" else "<"
    return f"{check.metric} {check.value:.4g} {sign} {check.limit:g}"


def _at(result: ConcurrencyResult) -> str:
    """A result's load point in a reason: concurrency 16, 4 req/s."""
    return f"concurrency {result.concurrency}" if result.concurrency is not None else load_of(result).label


def cell_verdict(
    campaign: Campaign,
    *,
    boot_ok: bool,
    boot_reason: str,
    warmup_error: str | None,
    results: Sequence[ConcurrencyResult],
) -> tuple[Verdict, str]:
    """Green, or red with the first reason: a failed boot, a failed warm-up, failed requests, an SLA breach."""
    if not boot_ok:
        return "red", f"boot failed: {boot_reason}"
    if warmup_error is not None:
        return "red", f"warm-up failed: {warmup_error}"
    for result in results:
        if not result.ok:
            return "red", f"{_at(result)}: {result.reason}"
    if campaign.focus == "goodput":
        if results and not any(r.sla_ok for r in results):
            return "red", "SLA: no concurrency stayed inside it (goodput needs at least one)"
        return "green", "every request completed; goodput is the best concurrency inside the SLA"
    if campaign.focus == "slo_goodput":  # each request is held to the SLA's limits: a breach is goodput lost, not red
        return "green", "every request completed; goodput counts those inside the SLA's per-request limits"
    for result in results:
        broken = [_breach(c) for c in result.sla if not c.ok]
        if broken:
            return "red", f"SLA at {_at(result)}: {'; '.join(broken)}"
    return "green", "every request completed at every concurrency" + (" within the SLA" if campaign.sla else "")


# ---- the table -----------------------------------------------------------------------------------------------


def _mean(result: ConcurrencyResult, metric: str) -> float | None:
    return result.metrics[metric].mean if metric in result.metrics else None


def _failed(result: ConcurrencyResult) -> int | None:
    figures = [t.figures for t in result.repeats if t.figures is not None]
    return sum(f.failed for f in figures) if figures else None


def table_rows(campaign: Campaign, verdict: CellVerdict) -> list[TableRow]:
    metric = FOCUS_METRIC[campaign.focus]
    rows = []
    for r in verdict.results:
        focus = r.metrics.get(metric)
        rows.append(
            TableRow(
                cell=verdict.cell,
                workload=r.workload,
                concurrency=r.concurrency,
                rate=r.rate,
                speedup=r.speedup,
                verdict=verdict.verdict,
                regime=verdict.context.regime.label,
                ok=r.ok,
                sla_ok=r.sla_ok,
                focus_value=focus.mean if focus else None,
                focus_std=focus.std if focus else None,
                focus_n=focus.n if focus else None,
                output_throughput=_mean(r, "output_throughput"),
                output_throughput_per_gpu=_mean(r, "output_throughput_per_gpu"),
                tokens_per_s_per_user=_mean(r, "tokens_per_s_per_user"),
                median_ttft_ms=_mean(r, "median_ttft_ms"),
                p99_ttft_ms=_mean(r, "p99_ttft_ms"),
                median_tpot_ms=_mean(r, "median_tpot_ms"),
                median_itl_ms=_mean(r, "median_itl_ms"),
                failed=_failed(r),
                num_prompts=r.num_prompts,
                sent_rate=_mean(r, "sent_rate"),
                goodput_requests=_mean(r, "goodput_requests"),
                goodput_output_throughput=_mean(r, "goodput_output_throughput"),
            )
        )
    return rows


def campaign_table(
    campaign: Campaign,
    cells: Sequence[str],
    verdicts: dict[str, CellVerdict],
    replicates: Replicates | None = None,
    earlier: Noise | None = None,
) -> CampaignTable:
    """One row per cell and concurrency, in cell order, each figure as every verdict reads it (over the cell's boots,
    where a band was measured between boots: read_cells); cells without a verdict are listed as missing."""
    metric = FOCUS_METRIC[campaign.focus]
    read, _ = read_cells(campaign, verdicts, replicates, earlier)
    rows = [row for name in cells if name in read for row in table_rows(campaign, read[name])]
    return CampaignTable(
        campaign=campaign.name,
        focus=campaign.focus,
        focus_metric=metric,
        direction=DIRECTIONS[metric],
        # the listed concurrencies and rates and any a load boundary probed, in order
        concurrencies=sorted({*campaign.concurrencies, *(r.concurrency for r in rows if r.concurrency is not None)}),
        rates=sorted({p.rate for p in _listed(campaign, rows) if p.rate}),
        speedups=sorted({p.speedup for p in _listed(campaign, rows) if p.speedup}),
        cells=list(cells),
        missing=[c for c in cells if c not in verdicts],
        rows=rows,
    )


def _listed(campaign: Campaign, rows: Sequence[TableRow]) -> list[Load]:
    """Every load point a workload of the campaign lists, and every one its rows were benched at."""
    return [p for name, _ in campaign.shapes() for p in campaign.points_of(name)] + [load_of(r) for r in rows]


# ---- the champion ----------------------------------------------------------------------------------------------

SCORING = {
    "throughput": "the mean output tokens/s per {per} at the {point} where it is highest",
    "latency": "the geometric mean over the {points} of the mean median TPOT (ms)",
    "goodput": "the highest mean output tokens/s per {per} among the {points} inside the SLA",
    "slo_goodput": "the highest goodput (output tokens/s per {per} of the requests inside the SLA's per-request "
    "limits) among the open-loop points (rates, a trace's arrivals)",
}


def scoring(focus: str, per: str = "GPU", points: Iterable[Load] = ()) -> str:
    """How a cell's figures become its score, in words; `per`: what its per-GPU figure is per (a GPU, or on a host
    without one, the host or a device: models/context.py device_of); `points`: the load points it is chosen among."""
    point, plural = kind_said(points)
    return SCORING[focus].format(per=per, point=point, points=plural)


def _scoring(campaign: Campaign, cells: Sequence[str], verdicts: dict[str, CellVerdict]) -> str:
    read = [verdicts[name] for name in cells if name in verdicts]
    points = [load_of(r) for v in read for r in v.results] or _listed(campaign, [])
    return scoring(campaign.focus, device_of(v.context for v in read), points)


def _order(cells: Iterable[RankedCell], direction: str) -> list[RankedCell]:
    sign = -1 if direction == "higher" else 1
    return sorted(cells, key=lambda c: (c.score is None, sign * (c.score or 0.0)))


def read_cells(
    campaign: Campaign, verdicts: dict[str, CellVerdict], replicates: Replicates | None, earlier: Noise | None = None
) -> tuple[dict[str, CellVerdict], dict[str, Any]]:
    """Every cell as every verdict reads it (policy/boots.py: each figure over its boots where a band was measured
    between boots) and each metric's band: what champion_select, campaign_aggregate, campaign_report and
    perf_baseline_diff all judge."""
    reps = replicates or {}
    noise = campaign_noise(campaign, verdicts, reps, earlier)
    return {c: over_boots(v, reps.get(c, ()), noise) for c, v in verdicts.items()}, noise


def select_champion(
    campaign: Campaign,
    cells: Sequence[str],
    baseline: str,
    verdicts: dict[str, CellVerdict],
    *,
    top: int = 3,
    replicates: Replicates | None = None,
    earlier: Noise | None = None,
) -> ChampionReport:
    """The champion: the best win over the baseline, in the baseline's regime, beyond the noise (policy/noise.py;
    the band measured between the boots of the cells booted more than once, `replicates`, else the one `earlier`
    boots of this setup measured: policy/boots.py), and no figure worse beyond the noise (RED, as
    perf_baseline_diff judges every metric). DRAFT."""
    direction = DIRECTIONS[metric := FOCUS_METRIC[campaign.focus]]
    read, noise = read_cells(campaign, verdicts, replicates, earlier)
    base_v = read.get(baseline)
    base_regime = base_v.context.regime.label if base_v is not None else None
    groups = _groups(campaign, cells, baseline, read, noise)
    ranked = _order(groups.pop(base_regime, []), direction) if base_regime else []
    wins = [c for c in ranked if c.outcome == "win"]
    engines = list(dict.fromkeys(read[name].context.engine.name for name in cells if name in read))
    champion = wins[0].cell if wins else None
    base_ok = base_v is not None and base_v.verdict == "green"
    outcome, note = _outcome(base_v, base_ok, ranked, champion, baseline, across_engines=len(engines) > 1)
    seen, flags = detectable([(c.cell, c.noise) for c in ranked if c.noise]), _flags(cells, read)
    seen += f"; {b}" if (b := blind(noise.get(metric) or fallback(campaign), _boot_s(read))) else ""
    return ChampionReport(
        **{"campaign": campaign.name, "focus": campaign.focus, "scoring": _scoring(campaign, cells, read)},
        **{"metric": metric, "direction": direction, "baseline": baseline, "regime": base_regime},
        champion=champion,
        champion_engine=wins[0].engine if wins else None,
        **{"engines": engines, "outcome": outcome, "note": _note(note, seen, flags)},
        ranked=ranked,
        top=[c.cell for c in ranked if c.score is not None][:top],
        other_regimes=[_other_group(regime, group, base_regime, direction) for regime, group in groups.items()],
        excluded=_exclusions(cells, read),
        detectable=seen,
        flags=flags,
    )


def _boot_s(read: dict[str, CellVerdict]) -> float | None:
    """What a boot of a cell and its benches took, on average (what one more boot costs)."""
    return statistics.fmean(v.wall_s for v in read.values()) if read else None


def _flags(cells: Sequence[str], read: dict[str, CellVerdict]) -> list[MetricFlag]:
    return [f for name in cells if name in read for f in cell_flags(read[name])]


def _note(note: str, seen: str, flags: Sequence[MetricFlag]) -> str:
    flagged = f" Implausible, not ranked on: {'; '.join(f.why for f in flags)}." if flags else ""
    return f"{note}; {seen}. {DRAFT_NOTE}.{flagged}"


def cell_points(verdict: CellVerdict) -> list[BaselinePoint]:
    """A cell's points as a baseline's (perf_baseline_record takes a cell the same way): each ok concurrency."""
    return [
        BaselinePoint(context=verdict.context_at(r), metrics=r.metrics) for r in verdict.results if r.ok and r.metrics
    ]


def _every_metric(ranked: RankedCell, base: CellVerdict, cell: CellVerdict, noise: Noise) -> RankedCell:
    """The ranked cell with every metric judged against the baseline cell (the one comparison); a win on the score
    with a figure worse beyond the noise (RED) is mixed, an even score so is worse: never the champion."""
    try:
        found = compared(cell_points(base), cell_points(cell), ranked.noise.metric, noise)  # type: ignore[union-attr]
    except InputError:  # no point in common: nothing to judge beside the score
        return ranked
    update: dict[str, Any] = {"colour": found.colour, "regressed": found.regressed, "compared": found.points}
    if found.colour == "RED" and ranked.outcome in ("win", "no_improvement"):
        outcome = "mixed" if ranked.outcome == "win" else "worse"
        update |= {
            "outcome": outcome,
            "why": f"{ranked.why}; but {found.why} (every metric, as perf_baseline_diff judges it)",
        }
    return ranked.model_copy(update=update)


def _groups(
    campaign: Campaign,
    cells: Sequence[str],
    baseline: str,
    read: dict[str, CellVerdict],
    noise: Noise,
) -> dict[str, list[RankedCell]]:
    """The green cells (read over their boots) ranked against the (green) baseline, by regime, by each metric's
    band."""
    band = noise.get(FOCUS_METRIC[campaign.focus]) or fallback(campaign)
    base_v = read.get(baseline)
    ok = base_v is not None and base_v.verdict == "green"
    base = base_of(campaign, base_v) if ok else None
    groups: dict[str, list[RankedCell]] = {}
    for name in cells:
        v = read.get(name)
        if v is not None and v.verdict == "green":
            ranked = rank(campaign, name, v, base, baseline, band)
            if base_v is not None and ranked.noise is not None:
                ranked = _every_metric(ranked, base_v, v, noise)
            groups.setdefault(v.context.regime.label, []).append(ranked)
    return groups


def _exclusions(cells: Sequence[str], verdicts: dict[str, CellVerdict]) -> list[RankedCell]:
    out = []
    for name in cells:
        v = verdicts.get(name)
        if v is None:
            out.append(RankedCell(cell=name, regime="", score=None, outcome="excluded", why="no verdict yet"))
        elif v.verdict == "red":
            regime, engine = v.context.regime.label, v.context.engine.name
            out.append(
                RankedCell(
                    cell=name, engine=engine, regime=regime, score=None, outcome="excluded", why=f"red: {v.reason}"
                )
            )
    return out


def _other_group(regime: str, group: list[RankedCell], base_regime: str | None, direction: str) -> RegimeGroup:
    why = f"regime {regime} differs from the baseline's {base_regime}: ranked only among themselves"
    reset: dict[str, Any] = {"outcome": "not_ranked", "why": why, "regressed": [], "compared": []}
    cells = [
        c.model_copy(update=dict.fromkeys(("delta_pct", "noise_band_pct", "band_source", "noise", "colour")) | reset)
        for c in group
    ]
    return RegimeGroup(regime=regime, cells=_order(cells, direction), note=f"never ranked against the champion: {why}")


def _outcome(
    base_v: CellVerdict | None,
    base_ok: bool,
    ranked: list[RankedCell],
    champion: str | None,
    baseline: str,
    *,
    across_engines: bool = False,
) -> tuple[Any, str]:
    if base_v is None:
        return "no_baseline", f"the baseline cell {baseline!r} has no verdict yet: run the campaign first"
    if not base_ok:
        return "no_baseline", (
            f"the baseline cell {baseline!r} is red ({base_v.reason}): no cell can be called "
            "an improvement until it is green"
        )
    if champion is None:
        if not any(c.outcome != "baseline" for c in ranked):
            return "no_results", "no other green cell in the baseline's regime to compare"
        held = _baseline_engine_held(ranked, base_v.context.engine.name) if across_engines else ""
        return "no_improvement", f"no improvement: no cell beat the baseline by more than the noise band{held}"
    win = next(c for c in ranked if c.cell == champion)
    won = f" ({win.engine} won; the baseline {baseline!r} ran {base_v.context.engine.name})" if across_engines else ""
    return "improvement", f"champion {champion!r}{won}: {win.why}"


def _baseline_engine_held(ranked: list[RankedCell], engine: str) -> str:
    """Across engines without a champion: whether the baseline's engine won outright or no engine did."""
    rivals = [c for c in ranked if c.engine != engine]
    if rivals and all(c.outcome == "worse" for c in rivals):
        names = ", ".join(sorted({str(c.engine) for c in rivals}))
        return f" ({engine} won: every {names} cell is worse than the baseline beyond the noise band)"
    inside = [c.cell for c in rivals if c.outcome == "no_improvement"]
    return f" (no engine won: {', '.join(inside)} inside the noise band)" if inside else ""


# ---- plots ----------------------------------------------------------------------------------------------------


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (both higher-is-better), by x descending."""
    front: list[tuple[float, float]] = []
    best_y = -math.inf
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > best_y:
            front.append((x, y))
            best_y = y
    return front
