"""campaign_report: report.md and its PNG plots (ops/campaign/plots.py) in the campaign's results folder.

Everything here is derived from the verdicts: delete it and run the report again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from redline.ledger.campaign_file import cells_of
from redline.models.campaign import Campaign
from redline.models.campaign_report import CampaignReport, Plot
from redline.models.campaign_results import (
    CampaignTable,
    CellVerdict,
    ChampionReport,
    RankedCell,
    TableRow,
)
from redline.models.context import Node, device_of
from redline.models.load_boundary import LoadBoundary
from redline.models.metrics import DIRECTIONS
from redline.models.workloads import Load, WorkloadSpec, load_of
from redline.ops.campaign.noise import campaign_boots, champion_of, table_of
from redline.ops.campaign.plots import draw, pareto_plot, plots_of
from redline.ops.campaign_read import load_campaign
from redline.ops.requests import CampaignReportRequest

# ---- report.md (pure) ----------------------------------------------------------------------------------------------

# Every text report.md interpolates (names, GPU, gates, notes: anything a file or a tool argument carried) is
# escaped (issue 19, class 9): HTML as entities, markdown's punctuation with a backslash, a line break as a space,
# and `://`, `@` and `www.` broken so that no autolink forms: no name can put live HTML, a script or a link there.
# `>` stays as written (no tag opens without `<`), so the report's own "2,048 -> 8,192" reads as it does in a
# terminal; one that starts a line, where markdown would quote it, is escaped.
_MARKUP = re.compile(r"([\\`*_\[\]!|~@]|:(?=//)|^>)")
_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", '"': "&quot;"})


def md(value: object) -> str:
    """value as literal text in markdown: no HTML, link, image, emphasis, code, heading or table cell break."""
    text = " ".join(str(value).split()).translate(_HTML)
    return re.sub(r"(?i)www\.", lambda m: m.group(0)[:3] + "\\.", _MARKUP.sub(r"\\\1", text))


def sentence(value: object) -> str:
    """value as md's, ending in one full stop (a note that ends in its own is not given a second)."""
    text = md(value)
    return text if text.endswith(".") else f"{text}."


def code(value: object) -> str:
    """value as inline code where it is a plain name or path (no markup can live in those characters), else md's."""
    text = str(value)
    return f"`{text}`" if re.fullmatch(r"[A-Za-z0-9._/+-]{1,200}", text) else md(text)


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _context_lines(campaign: Campaign, verdicts: dict[str, CellVerdict]) -> list[str]:
    if not verdicts:
        return ["No cell has a verdict yet."]
    ctx = next(iter(verdicts.values())).context
    hw = ctx.hardware
    gpu = f"GPU: {hw.gpu_count} x {md(hw.gpu_name)} ({hw.gpu_memory_gib} GiB)" if hw.gpu_name else "hardware: CPU host"
    versions: dict[str, set[str]] = {}
    for v in verdicts.values():
        versions.setdefault(v.context.engine.name, set()).add(v.context.engine.version or "unknown")
    engines = "; ".join(f"{md(name)} {md(', '.join(sorted(vs)))}" for name, vs in versions.items())
    backends = ", ".join(
        sorted({code(v.context.bench.backend if v.context.bench else None) for v in verdicts.values()})
    )
    return [
        f"- model: {code(ctx.model.name)}",
        f"- {gpu}; host {md((ctx.node or Node()).describe())}",
        f"- engine: {engines}; bench client: {md(ctx.bench.client if ctx.bench else '?')}'s, backend {backends}",
        *[
            f"- workload{f' {md(name)}' if name else ''}: {_shape_text(w)}, ignore_eos, seed {w.seed}; "
            f"{_points_text(campaign.points_of(name), w.burstiness)}"
            for name, w in campaign.shapes()
        ],
        f"- warm-up: {campaign.warmup_requests} requests; trials per concurrency: {campaign.repeats}; simulated: "
        f"{'yes' if any(v.context.provenance == 'simulated' for v in verdicts.values()) else 'no'}",
        f"- focus: {campaign.focus}; " + _sla_text(campaign),
    ]


def _shape_text(w: WorkloadSpec) -> str:
    """What a workload's requests are: random prompts of its lengths, or a trace's (its file, its rows, its lengths)."""
    if w.dataset == "trace":
        trace, (top_in, top_out) = w.replayed, w.lengths
        return f"trace {md(w.trace_id)}, fresh prompts of its lengths (up to {top_in} in / {top_out} out tokens)" + (
            f", {trace.own_rate:.3g} req/s as recorded" if trace.own_rate else ""
        )
    spread = f" (x1 +- {w.range_ratio:g})" if w.range_ratio else ""
    prefix = f", a {w.prefix_len}-token prefix shared" if w.prefix_len else ""
    return f"{w.dataset}, input {w.input_len} / output {w.output_len} tokens{spread}{prefix}"


def _points_text(points: Sequence[Load], burstiness: float) -> str:
    """A workload's load points in the report's context: its concurrencies, its rates and their arrivals, a trace's
    speedups."""
    cs = [str(p.concurrency) for p in points if p.concurrency is not None]
    rates = [f"{p.rate:g}" for p in points if p.rate is not None]
    speedups = [f"x{p.speedup:g}" for p in points if p.speedup is not None]
    shape = "Poisson" if burstiness == 1.0 else f"gamma, burstiness {burstiness:g}"
    said = [f"concurrencies {', '.join(cs)}"] if cs else []
    said += [f"request rates {', '.join(rates)} req/s (open loop, {shape} arrivals)"] if rates else []
    said += [f"its own arrivals at {', '.join(speedups)} (open loop, as recorded at x1)"] if speedups else []
    return "; ".join(said)


def _sla_text(campaign: Campaign) -> str:
    if not campaign.sla:
        return "no SLA"
    return "SLA: " + ", ".join(f"{k} {_sla_sign(k)} {v:g}" for k, v in campaign.sla.items())


def _sla_sign(metric: str) -> str:
    return "<=" if DIRECTIONS[metric] == "lower" else ">="


def _table_lines(table: CampaignTable) -> list[str]:
    """A row per cell, or per cell and workload where there are several (a workload column then names it)."""
    workloads = list(dict.fromkeys(r.workload for r in table.rows)) or [None]
    named = workloads != [None]
    points = [Load(concurrency=c) for c in table.concurrencies] + [Load(rate=r) for r in table.rates]
    points += [Load(speedup=x) for x in table.speedups]
    head = ["cell", *(["workload"] if named else []), "regime", *[p.label for p in points]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in table.cells:
        for w in workloads:
            rows = {load_of(r): r for r in table.rows if r.cell == cell and r.workload == w}
            first = f"| {md(cell)} | " + (f"{md(w or '-')} | " if named else "")
            if not rows:
                lines.append(first + "- | " + " | ".join("not run" for _ in points) + " |")
                continue
            regime = next(iter(rows.values())).regime
            lines.append(first + f"{md(regime)} | " + " | ".join(_cell_text(rows.get(p)) for p in points) + " |")
    return lines


def _cell_text(row: TableRow | None) -> str:
    if row is None:
        return "-"
    text = _num(row.focus_value, 2)
    if row.focus_std is not None:
        text += f" ± {_num(row.focus_std, 2)} (n={row.focus_n})" if row.focus_n else f" ± {_num(row.focus_std, 2)}"
    guards = [g for g, bad in (("FAILED", not row.ok), ("SLA", not row.sla_ok)) if bad]
    if row.goodput_output_throughput is not None:
        text += f"; goodput {_num(row.goodput_output_throughput, 1)} tok/s"
    if row.sent_rate is not None:
        text += f"; sent {_num(row.sent_rate, 3)} req/s"
    return text + (f" ({', '.join(guards)})" if guards else "")


def _ranked_line(c: RankedCell, engines: bool = False) -> str:
    if c.score is None and c.delta_pct is not None:  # a cell across workloads: its gain by the rule, not one figure
        return (
            f"- **{md(c.cell)}** ({md(c.regime)}): {c.delta_pct:+.2f}%: {md(c.outcome.replace('_', ' '))}; {md(c.why)}"
        )
    point = Load(c.at_concurrency, c.at_rate, c.at_speedup)
    at = f" at {point.label}" if any(x is not None for x in point) else ""
    label = f"{c.engine}, {c.regime}" if engines else c.regime
    return f"- **{md(c.cell)}** ({md(label)}): {_num(c.score, 2)}{at}: {md(c.outcome.replace('_', ' '))}; {md(c.why)}"


def render_markdown(
    campaign: Campaign,
    table: CampaignTable,
    champion: ChampionReport,
    plots: Sequence[Plot],
    verdicts: dict[str, CellVerdict],
) -> str:
    outcome = champion.outcome.replace("_", " ")
    across = len(champion.engines) > 1
    won = f", {md(champion.champion_engine)} won" if across else ""
    head = f"champion **{md(champion.champion)}** (DRAFT{won})" if champion.champion else f"**{md(outcome)}**"
    lines = [
        f"# Campaign {md(campaign.name)}",
        "",
        f"Result: {head}.",
        "",
        sentence(champion.note),
        "",
        *_context_lines(campaign, verdicts),
        "",
        f"## {md(table.focus_metric)} ({md(table.direction)} is better), by cell and concurrency",
        "",
        "Each figure the mean over the cell's boots (a band measured between boots), else its benches' (± std, n). "
        f"Scoring: {md(champion.scoring)}.",
        "",
        *_table_lines(table),
        "",
        "## Ranking (the baseline's regime)",
        "",
    ]
    lines += _ranking_lines(champion, across)
    return "\n".join([*lines, *_more_lines(champion, plots, verdicts, across)])


def _ranking_lines(champion: ChampionReport, across: bool) -> list[str]:
    """The ranking: the cells' lines; where there are several workloads, each workload's, then the one across them."""
    lines = [_ranked_line(c, across) for c in champion.ranked]
    for report in champion.workloads:
        head = f"champion {md(report.champion)}" if report.champion else md(report.outcome.replace("_", " "))
        lines += ["", f"### Workload {md(report.workload)}: {head}", "", md(report.note), ""]
        lines += [_ranked_line(c, across) for c in report.ranked]
    if champion.workloads and champion.ranked:
        lines.insert(0, f"Across the workloads ({md(champion.combine)}), by the gain the rule counts:")
    return lines or ["- nothing to rank yet"]


def _more_lines(
    champion: ChampionReport, plots: Sequence[Plot], verdicts: dict[str, CellVerdict], across: bool
) -> list[str]:
    """The other regimes, the cells not ranked, the gates applied and the plots."""
    lines: list[str] = []
    for group in champion.other_regimes:
        lines += [
            "",
            f"### Regime {md(group.regime)}",
            "",
            md(group.note),
            "",
            *[_ranked_line(c, across) for c in group.cells],
        ]
    if champion.excluded:
        lines += ["", "## Not ranked", "", *[f"- **{md(c.cell)}**: {md(c.why)}" for c in champion.excluded]]
    flagged = _flagged_lines(verdicts)
    if flagged:
        lines += ["", "## Benches flagged (left out of every verdict)", "", *flagged]
    found = {cell: v.boundary for cell, v in verdicts.items() if v.boundary is not None}
    if found:
        lines += ["", "## Load boundary (measured, one server per cell)", ""]
        lines += [f"- **{md(cell)}**: {_boundary_text(b)}" for cell, b in found.items()]
    gates = sorted({g for v in verdicts.values() for g in v.gates})
    if gates:
        lines += ["", "## Methodology gates applied", "", *[f"- {md(g)}" for g in gates]]
    lines += ["", "## Plots", "", *[f"![{p.title}]({p.file})" for p in plots], ""]
    return lines


def _flagged_lines(verdicts: dict[str, CellVerdict]) -> list[str]:
    """Every bench a check flagged (a GPU throttled or shared, a warm cache, a client short of its load), the check and
    what it said."""
    return [
        f"- **{md(cell)}**{f' {md(r.workload)}' if r.workload else ''} at {load_of(r).label}, repeat {t.repeat}: "
        f"{md(c.check)}: {md(c.said)}"
        for cell, v in verdicts.items()
        for r in v.results
        for t in r.repeats
        for c in t.checks
        if not c.ok
    ]


def _boundary_text(b: LoadBoundary) -> str:
    if b.by == "rate":
        at = f"{b.rate:g} req/s" if b.rate is not None else "no request rate held"
    else:
        at = f"concurrency {b.concurrency}" if b.concurrency is not None else "no concurrency held"
    head = at if b.finished else "not found"
    return f"{head}{' (a cliff)' if b.cliff else ''}: {md(b.why)}; {b.probes} benches"


# ---- the operation ---------------------------------------------------------------------------------------------------


def campaign_report(
    path: str | Path, request: CampaignReportRequest | None = None, *, workspace: Path | None = None
) -> CampaignReport:
    """Write report.md and the PNG plots into the campaign's results folder; return the data behind them."""
    loaded = load_campaign(path, workspace)
    boots = campaign_boots(loaded)
    verdicts, table, champion = boots.verdicts, table_of(loaded, boots), champion_of(loaded, boots)
    plots = plots_of(table, champion, device_of(v.context for v in verdicts.values()))
    layout = cells_of(loaded.results)
    for plot in plots:
        draw(plot, layout.checked(layout.root / plot.file, create=True))  # checked right before
    report = layout.root / "report.md"
    layout.write(report, render_markdown(loaded.campaign, table, champion, plots, verdicts))
    return CampaignReport(
        campaign=loaded.campaign.name, report=str(report), plots=plots, table=table, champion=champion
    )


__all__ = ["campaign_report", "code", "draw", "md", "pareto_plot", "plots_of", "render_markdown", "sentence"]
