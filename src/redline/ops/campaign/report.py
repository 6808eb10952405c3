"""campaign_report: report.md and three PNG plots in the campaign's results folder.

    throughput.png   output tokens/s against concurrency, one line per cell
    tpot.png         median TPOT against concurrency, one line per cell
    pareto.png       tokens/s per user against tokens/s per GPU (per host, or per device, where the host showed no
                     GPU), every green point, the Pareto front, the champion

The series behind every plot are returned (and are what the tests check); the
pictures are drawn from them with matplotlib's Agg canvas, never a window.
Everything here is derived from the verdicts: delete it and run the report again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from redline.ledger.campaign_file import cells_of
from redline.models.campaign import Campaign
from redline.models.campaign_results import (
    CampaignReport,
    CampaignTable,
    CellVerdict,
    ChampionReport,
    Plot,
    RankedCell,
    Series,
    TableRow,
)
from redline.models.context import Node, device_of
from redline.models.load_boundary import LoadBoundary
from redline.models.metrics import DIRECTIONS
from redline.ops.campaign.noise import campaign_boots, champion_of, table_of
from redline.ops.campaign_read import load_campaign
from redline.ops.requests import CampaignReportRequest
from redline.policy import champion as champions

# ---- the data behind the plots (pure) ---------------------------------------------------------------------------


def _label(row: TableRow) -> str:
    name = row.cell if row.workload is None else f"{row.cell} on {row.workload}"
    return name if row.verdict == "green" else f"{name} (red)"


def _by_cell(rows: Sequence[TableRow], value: str) -> list[Series]:
    """One series per cell (per cell and workload, where there are several): concurrency against `value`, where the
    row has it."""
    series: dict[tuple[str, str | None], Series] = {}
    for row in rows:
        y = getattr(row, value)
        if y is None:
            continue
        s = series.setdefault((row.cell, row.workload), Series(label=_label(row), x=[], y=[]))
        s.x.append(float(row.concurrency))
        s.y.append(float(y))
    return list(series.values())


def _points(rows: Sequence[TableRow], cells: set[str] | None = None) -> list[tuple[float, float]]:
    return [
        (r.output_throughput_per_gpu, r.tokens_per_s_per_user)
        for r in rows
        if r.verdict == "green"
        and r.ok
        and r.output_throughput_per_gpu is not None
        and r.tokens_per_s_per_user is not None
        and (cells is None or r.cell in cells)
    ]


def pareto_plot(table: CampaignTable, champion: ChampionReport, per: str = "GPU", workload: str | None = None) -> Plot:
    """`per`: what the per-GPU figure is per (models/context.py device_of): GPU, or on a host without one, host or
    device; `workload`: the one workload whose points it plots, where there are several (never two shapes on one
    front)."""
    green = [r for r in table.rows if r.verdict == "green" and r.ok and r.workload == workload]
    series = []
    for cell in dict.fromkeys(r.cell for r in green):
        pts = _points(green, {cell})
        series.append(Series(label=cell, x=[p[0] for p in pts], y=[p[1] for p in pts]))
    front = champions.pareto_front(_points(green))
    series.append(Series(label="Pareto front", x=[p[0] for p in front], y=[p[1] for p in front]))
    mark_cell = champion.champion or (champion.baseline if champion.outcome == "no_improvement" else None)
    marked = None
    if mark_cell is not None:
        pts = _points(green, {mark_cell})
        label = f"champion {mark_cell} (DRAFT)" if champion.champion else f"baseline {mark_cell} (no improvement found)"
        marked = Series(label=label, x=[p[0] for p in pts], y=[p[1] for p in pts])
    on = f"-{workload}" if workload else ""
    return Plot(
        name="pareto" + on,
        file=f"pareto{on}.png",
        title=f"Tokens/s per user against tokens/s per {per}" + (f", workload {workload}" if workload else ""),
        x_label=f"output tokens/s per {per}",
        y_label="tokens/s per user (1000 / median TPOT)",
        series=series,
        marked=marked,
    )


def plots_of(table: CampaignTable, champion: ChampionReport, per: str = "GPU") -> list[Plot]:
    return [
        Plot(
            name="throughput",
            file="throughput.png",
            title="Output throughput against concurrency",
            x_label="concurrency",
            y_label="output tokens/s",
            series=_by_cell(table.rows, "output_throughput"),
        ),
        Plot(
            name="tpot",
            file="tpot.png",
            title="Median TPOT against concurrency",
            x_label="concurrency",
            y_label="median TPOT (ms)",
            series=_by_cell(table.rows, "median_tpot_ms"),
        ),
        *[pareto_plot(table, _on(champion, w), per, w) for w in dict.fromkeys(r.workload for r in table.rows)],
    ]


def _on(champion: ChampionReport, workload: str | None) -> ChampionReport:
    """The report whose champion a workload's Pareto plot marks: the champion across workloads where one is named,
    else that workload's own."""
    own = next((r for r in champion.workloads if r.workload == workload), champion)
    return champion if champion.champion else own


# ---- drawing (the only matplotlib here) ------------------------------------------------------------------------


def draw(plot: Plot, path: Path) -> None:
    """The plot as a PNG at path (a derived file: a kill mid-write is mended by running the report again)."""
    from matplotlib.figure import Figure  # a Figure on the Agg canvas: no pyplot, no window, no global state

    fig = Figure(figsize=(7, 4.5), dpi=110)
    ax = fig.add_subplot()
    for s in plot.series:
        if plot.name.startswith("pareto") and s.label == "Pareto front":
            ax.plot(s.x, s.y, "--", color="black", linewidth=1, label=s.label)
        elif plot.name.startswith("pareto"):
            ax.scatter(s.x, s.y, label=s.label, s=24)
        else:
            ax.plot(s.x, s.y, marker="o", label=s.label)
    if plot.marked is not None and plot.marked.x:
        ax.scatter(
            plot.marked.x,
            plot.marked.y,
            marker="*",
            s=220,
            color="gold",
            edgecolors="black",
            zorder=5,
            label=plot.marked.label,
        )
    if not plot.name.startswith("pareto"):
        ax.set_xscale("log", base=2)
    ax.set(title=plot.title, xlabel=plot.x_label, ylabel=plot.y_label)
    ax.grid(True, alpha=0.3)
    if plot.series or plot.marked:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, format="png")


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
            f"- workload{f' {md(name)}' if name else ''}: {w.dataset}, input {w.input_len} / output {w.output_len} "
            f"tokens{f' (x1 +- {w.range_ratio:g})' if w.range_ratio else ''}"
            f"{f', a {w.prefix_len}-token prefix shared' if w.prefix_len else ''}, ignore_eos, seed {w.seed}; "
            f"concurrencies {', '.join(map(str, campaign.concurrencies))}"
            for name, w in campaign.shapes()
        ],
        f"- warm-up: {campaign.warmup_requests} requests; trials per concurrency: {campaign.repeats}; simulated: "
        f"{'yes' if any(v.context.provenance == 'simulated' for v in verdicts.values()) else 'no'}",
        f"- focus: {campaign.focus}; " + _sla_text(campaign),
    ]


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
    head = ["cell", *(["workload"] if named else []), "regime", *[f"c={c}" for c in table.concurrencies]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in table.cells:
        for w in workloads:
            rows = {r.concurrency: r for r in table.rows if r.cell == cell and r.workload == w}
            first = f"| {md(cell)} | " + (f"{md(w or '-')} | " if named else "")
            if not rows:
                lines.append(first + "- | " + " | ".join("not run" for _ in table.concurrencies) + " |")
                continue
            regime = next(iter(rows.values())).regime
            lines.append(
                first + f"{md(regime)} | " + " | ".join(_cell_text(rows.get(c)) for c in table.concurrencies) + " |"
            )
    return lines


def _cell_text(row: TableRow | None) -> str:
    if row is None:
        return "-"
    text = _num(row.focus_value, 2)
    if row.focus_std is not None:
        text += f" ± {_num(row.focus_std, 2)} (n={row.focus_n})" if row.focus_n else f" ± {_num(row.focus_std, 2)}"
    guards = [g for g, bad in (("FAILED", not row.ok), ("SLA", not row.sla_ok)) if bad]
    return text + (f" ({', '.join(guards)})" if guards else "")


def _ranked_line(c: RankedCell, engines: bool = False) -> str:
    if c.score is None and c.delta_pct is not None:  # a cell across workloads: its gain by the rule, not one figure
        return (
            f"- **{md(c.cell)}** ({md(c.regime)}): {c.delta_pct:+.2f}%: {md(c.outcome.replace('_', ' '))}; {md(c.why)}"
        )
    at = f" at c={c.at_concurrency}" if c.at_concurrency else ""
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
        f"- **{md(cell)}**{f' {md(r.workload)}' if r.workload else ''} at c={r.concurrency}, repeat {t.repeat}: "
        f"{md(c.check)}: {md(c.said)}"
        for cell, v in verdicts.items()
        for r in v.results
        for t in r.repeats
        for c in t.checks
        if not c.ok
    ]


def _boundary_text(b: LoadBoundary) -> str:
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


__all__ = ["campaign_report", "code", "draw", "md", "plots_of", "render_markdown", "sentence"]
