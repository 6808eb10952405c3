"""A campaign's champion across its named workloads, as a pure function of its verdicts: no I/O here.

    report = select(campaign, cells, baseline, verdicts, top=3)

One workload: policy/champion.py's report, as it is. Several: each workload ranked on its own figures alone (its own
report under `workloads`, with its own noise band), then one answer across them by the campaign's `combine`, the
one combiner an A/B's verdict uses too (policy/combine.py: each, all, weights; METHODOLOGY.md rule 51). The champion
stays a DRAFT.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline.models.campaign import Campaign
from redline.models.campaign_results import CellVerdict, ChampionReport, RankedCell
from redline.policy.boots import Noise, Replicates
from redline.policy.champion import DRAFT_NOTE, select_champion
from redline.policy.combine import Call, OnWorkload, across, rule_of, scoring


def select(
    campaign: Campaign,
    cells: Sequence[str],
    baseline: str,
    verdicts: dict[str, CellVerdict],
    *,
    top: int = 3,
    replicates: Replicates | None = None,
    earlier: Noise | None = None,
) -> ChampionReport:
    """The campaign's champion report: per workload where it has several, and across them by `combine`.
    `replicates`: each cell's boots after its first, whose spread is the band every cell is judged by; `earlier`:
    the bands earlier boots of its setup measured, where it measured none."""
    names = [name for name, _ in campaign.shapes()]
    reps = replicates or {}
    if names == [None]:
        return select_champion(campaign, cells, baseline, verdicts, top=top, replicates=reps, earlier=earlier)
    per = [
        select_champion(
            campaign,
            cells,
            baseline,
            {c: v.of_workload(w) for c, v in verdicts.items()},
            top=top,
            replicates={c: [v.of_workload(w) for v in boots] for c, boots in reps.items()},
            earlier=earlier,
        ).model_copy(update={"workload": w})
        for w in names
    ]
    return across_cells(campaign, per, top)


def top_cells(report: ChampionReport, n: int) -> list[str]:
    """The n cells ranked first (the champion and the runner-up, for 2); across workloads judged each alone, each
    workload's n first."""
    tops = report.top[:n] or [cell for r in report.workloads for cell in r.top[:n]]
    return list(dict.fromkeys(tops))


def across_cells(campaign: Campaign, per: Sequence[ChampionReport], top: int) -> ChampionReport:
    """One report over the workloads' reports, by the campaign's combine rule."""
    first, rule = per[0], rule_of(campaign.combine)
    each = first.scoring if len({r.scoring for r in per}) == 1 else "; ".join(f"{r.workload}: {r.scoring}" for r in per)
    said = f"per workload, {each}; across them: {scoring(campaign.combine)}"
    common: dict[str, Any] = {
        "campaign": campaign.name,
        "focus": campaign.focus,
        "metric": first.metric,
        "direction": first.direction,
        "scoring": said,
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


OUTCOME: dict[str, Any] = {"win": "win", "worse": "worse", "mixed": "mixed", "no_improvement": "no_improvement"}


def on_workload(workload: str | None, cell: RankedCell | None) -> OnWorkload:
    """A cell's call on one workload, in the combiner's words (policy/combine.py)."""
    if cell is None:
        return OnWorkload(str(workload), "not_ranked", None, None, "no figure")
    calls: dict[str, Call] = {"baseline": "baseline", "win": "win", "worse": "worse", "mixed": "mixed"}
    call = calls.get(cell.outcome, "no_improvement" if cell.outcome == "no_improvement" else "not_ranked")
    return OnWorkload(str(workload), call, cell.delta_pct, cell.noise_band_pct, cell.why)


def combined(cell: str, per: Sequence[ChampionReport], combine: Any) -> RankedCell:
    """One cell across the workloads: baseline, not ranked (a workload missing or unranked), or judged by the one
    rule (policy/combine.py)."""
    found = [(r.workload, next((c for c in r.ranked if c.cell == cell), None)) for r in per]
    some = next(c for _, c in found if c is not None)
    out = RankedCell(cell=cell, engine=some.engine, regime=some.regime, score=None, outcome="baseline", why="")
    if some.outcome == "baseline":
        return out.model_copy(update={"why": "the cell the others are compared with, on every workload"})
    found_on = [on_workload(w, c) for w, c in found]
    judged = across(combine, found_on)
    update = {"outcome": OUTCOME.get(judged.call, "not_ranked"), "delta_pct": judged.gain, "why": judged.why}
    return out.model_copy(update=update | ({"noise_band_pct": judged.band} if judged.band is not None else {}))


__all__ = ["across_cells", "combined", "on_workload", "select", "top_cells"]
