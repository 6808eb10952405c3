"""A campaign's champion across its named workloads, as a pure function of its verdicts: no I/O here.

    report = select(campaign, cells, baseline, verdicts, top=3)

One workload: policy/champion.py's report, as it is. Several: each workload ranked on its own figures alone (its own
report under `workloads`, with its own noise band), then one answer across them by the campaign's `combine`:

- each (the default): one champion per workload and none across them (outcome per_workload), since no rule says
  how a win on one shape weighs against a loss on another;
- all: a champion must win on every workload beyond that workload's noise band; its gain is its smallest one;
- weights: the weighted mean of a cell's gains against the weighted mean of the workloads' noise bands.

A cell missing a workload, or not ranked on one (red there, a flagged figure), is not ranked across them: every
workload present, or no champion. The champion stays a DRAFT.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline.models.campaign import Campaign
from redline.models.campaign_results import CellVerdict, ChampionReport, RankedCell
from redline.models.workloads import Weights
from redline.policy.champion import DRAFT_NOTE, select_champion
from redline.policy.ranking import Replicates

SAID = {"all": "a win on every workload", "each": "one champion per workload"}


def select(
    campaign: Campaign,
    cells: Sequence[str],
    baseline: str,
    verdicts: dict[str, CellVerdict],
    *,
    top: int = 3,
    replicates: Replicates | None = None,
) -> ChampionReport:
    """The campaign's champion report: per workload where it has several, and across them by `combine`.
    `replicates`: each cell's boots after its first, whose spread is the band every cell is judged by."""
    names = [name for name, _ in campaign.shapes()]
    reps = replicates or {}
    if names == [None]:
        return select_champion(campaign, cells, baseline, verdicts, top=top, replicates=reps)
    per = [
        select_champion(
            campaign,
            cells,
            baseline,
            {c: v.of_workload(w) for c, v in verdicts.items()},
            top=top,
            replicates={c: [v.of_workload(w) for v in boots] for c, boots in reps.items()},
        ).model_copy(update={"workload": w})
        for w in names
    ]
    return across(campaign, per, top)


def top_cells(report: ChampionReport, n: int) -> list[str]:
    """The n cells ranked first (the champion and the runner-up, for 2); across workloads judged each alone, each
    workload's n first."""
    tops = report.top[:n] or [cell for r in report.workloads for cell in r.top[:n]]
    return list(dict.fromkeys(tops))


def rule_of(campaign: Campaign) -> str:
    c = campaign.combine
    if isinstance(c, Weights):
        return "weights " + ", ".join(f"{w} {x:g}" for w, x in c.weights.items())
    return c


def across(campaign: Campaign, per: Sequence[ChampionReport], top: int) -> ChampionReport:
    """One report over the workloads' reports, by the campaign's combine rule."""
    first, rule = per[0], rule_of(campaign)
    scoring = f"per workload, {first.scoring}; across them: {SAID.get(rule, 'the weighted mean of the gains')}"
    common: dict[str, Any] = {
        "campaign": campaign.name,
        "focus": campaign.focus,
        "metric": first.metric,
        "direction": first.direction,
        "scoring": scoring,
        "baseline": first.baseline,
        "regime": first.regime,
        "engines": list(dict.fromkeys(e for r in per for e in r.engines)),
        "combine": rule,
        "workloads": list(per),
        "excluded": first.excluded,
        "flags": [f for r in per for f in r.flags],
    }
    if campaign.combine == "each":  # each workload's own answer, whatever it is
        return ChampionReport(**common, champion=None, outcome="per_workload", note=_each_note(per), ranked=[], top=[])
    blocked = next((r for r in per if r.outcome in ("no_baseline", "no_results")), None)
    if blocked is not None:  # a rule across the workloads needs every one of them judged
        note = f"workload {blocked.workload}: {blocked.note}"
        return ChampionReport(**common, champion=None, outcome=blocked.outcome, note=note, ranked=[], top=[])
    return _combined_report(common, per, campaign.combine, rule, top)


def _combined_report(
    common: dict[str, Any], per: Sequence[ChampionReport], combine: Any, rule: str, top: int
) -> ChampionReport:
    """The cells judged across the workloads by an all or weights rule, best gain first; the champion its first win."""
    ranked = sorted(
        (combined(cell, per, combine) for cell in _cells(per)),
        key=lambda c: (c.delta_pct is None, -(c.delta_pct or 0.0)),
    )
    wins = [c for c in ranked if c.outcome == "win"]
    champion = wins[0] if wins else None
    head = (
        f"champion {champion.cell!r} across the workloads ({rule}): {champion.why}"
        if champion
        else f"no improvement across the workloads ({rule}): no cell won by the rule"
    )
    return ChampionReport(
        **common,
        champion=champion.cell if champion else None,
        champion_engine=champion.engine if champion else None,
        outcome="improvement" if champion else "no_improvement",
        note=f"{head}. {DRAFT_NOTE}.",
        ranked=ranked,
        top=[c.cell for c in ranked if c.delta_pct is not None][:top],
    )


def _each_note(per: Sequence[ChampionReport]) -> str:
    said = "; ".join(
        f"{r.workload}: " + (f"champion {r.champion!r}" if r.champion else r.outcome.replace("_", " ")) for r in per
    )
    return (
        f"one champion per workload ({said}): set combine: all, or combine: {{weights: {{...}}}}, to name one "
        f"across them. {DRAFT_NOTE}."
    )


def _cells(per: Sequence[ChampionReport]) -> list[str]:
    return list(dict.fromkeys(c.cell for r in per for c in r.ranked))


def combined(cell: str, per: Sequence[ChampionReport], combine: Any) -> RankedCell:
    """One cell across the workloads: baseline, not ranked (a workload missing or unranked), or judged by the rule."""
    found = [(r.workload, next((c for c in r.ranked if c.cell == cell), None)) for r in per]
    some = next(c for _, c in found if c is not None)
    out = RankedCell(cell=cell, engine=some.engine, regime=some.regime, score=None, outcome="baseline", why="")
    if some.outcome == "baseline":
        return out.model_copy(update={"why": "the cell the others are compared with, on every workload"})
    lacking = [f"{w}: {c.why if c else 'no figure'}" for w, c in found if c is None or c.delta_pct is None]
    if lacking:
        return out.model_copy(
            update={"outcome": "not_ranked", "why": "not ranked on every workload: " + "; ".join(lacking)}
        )
    judged = [(str(w), c) for w, c in found if c is not None]
    said = ", ".join(f"{w} {c.delta_pct:+.1f}% ({c.outcome.replace('_', ' ')})" for w, c in judged)
    if isinstance(combine, Weights):
        return _weighted(out, judged, combine, said)
    outcomes = {c.outcome for _, c in judged}
    outcome = "win" if outcomes == {"win"} else "worse" if "worse" in outcomes else "no_improvement"
    gain = min(float(c.delta_pct or 0.0) for _, c in judged)
    why = f"{said}: {'a win on every workload' if outcome == 'win' else 'not a win on every workload'}"
    return out.model_copy(update={"outcome": outcome, "delta_pct": round(gain, 3), "why": why})


def _weighted(out: RankedCell, judged: list[tuple[str, RankedCell]], combine: Weights, said: str) -> RankedCell:
    total = sum(combine.weights.values())
    if any(c.noise_band_pct is None for _, c in judged):
        return out.model_copy(update={"outcome": "not_ranked", "why": f"{said}: a workload has no noise band"})
    gain = sum(combine.weights[w] * float(c.delta_pct or 0.0) for w, c in judged) / total
    band = sum(combine.weights[w] * float(c.noise_band_pct or 0.0) for w, c in judged) / total
    outcome = "win" if gain > band else "worse" if gain < -band else "no_improvement"
    why = f"{said}: weighted gain {gain:+.2f}% against a weighted noise band of {band:.2f}%"
    update = {"outcome": outcome, "delta_pct": round(gain, 3), "noise_band_pct": round(band, 3), "why": why}
    return out.model_copy(update=update)


__all__ = ["across", "combined", "rule_of", "select", "top_cells"]
