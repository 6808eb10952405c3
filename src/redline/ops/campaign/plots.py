"""The plots of a campaign's report (ops/campaign/report.py writes them beside report.md): the series behind each, pure,
and their drawing, the only matplotlib in redline (imported where a plot is drawn).

    throughput.png   output tokens/s against concurrency, one line per cell
    tpot.png         median TPOT against concurrency, one line per cell
    goodput-rate.png goodput (output tokens/s of the requests inside the SLA) against the request rate asked, one line
                     per cell, where it benched open-loop rates (output tokens/s where it has no SLA)
    ttft-rate.png    p99 TTFT against the request rate asked: where queueing shows
    pareto.png       tokens/s per user against tokens/s per GPU (per host, or per device, where the host showed no
                     GPU), every green point, the Pareto front, the champion

The series behind every plot are returned (and are what the tests check); the pictures are drawn from them with
matplotlib's Agg canvas, never a window.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from redline.models.campaign_report import Plot, Series
from redline.models.campaign_results import CampaignTable, ChampionReport, TableRow
from redline.policy import champion as champions

# ---- the data behind the plots (pure) ---------------------------------------------------------------------------


def _label(row: TableRow) -> str:
    name = row.cell if row.workload is None else f"{row.cell} on {row.workload}"
    return name if row.verdict == "green" else f"{name} (red)"


def _by_cell(rows: Sequence[TableRow], value: str, by: str = "concurrency") -> list[Series]:
    """One series per cell (per cell and workload, where there are several): concurrency (or the rate asked, `by`)
    against `value`, where the row has both."""
    series: dict[tuple[str, str | None], Series] = {}
    for row in rows:
        x, y = getattr(row, by), getattr(row, value)
        if x is None or y is None:
            continue
        s = series.setdefault((row.cell, row.workload), Series(label=_label(row), x=[], y=[]))
        s.x.append(float(x))
        s.y.append(float(y))
    return list(series.values())


def rate_plots(table: CampaignTable) -> list[Plot]:
    """Where the campaign benched open-loop rates: its goodput (else its output throughput) and its p99 TTFT against
    the rate asked."""
    if not table.rates:
        return []
    good = any(r.goodput_output_throughput is not None for r in table.rows)
    value = "goodput_output_throughput" if good else "output_throughput"
    title = ("Goodput" if good else "Output throughput") + " against request rate"
    y_label = "output tokens/s inside the SLA" if good else "output tokens/s"
    return [
        _line(table, "goodput-rate", title, y_label, value, "rate"),
        _line(table, "ttft-rate", "p99 TTFT against request rate", "p99 TTFT (ms)", "p99_ttft_ms", "rate"),
    ]


X_LABELS = {"concurrency": "concurrency", "rate": "request rate asked (requests/s)"}


def _line(table: CampaignTable, name: str, title: str, y_label: str, value: str, by: str = "concurrency") -> Plot:
    """A plot of one series per cell: `value` against the concurrency (or the rate asked, `by`)."""
    series = _by_cell(table.rows, value, by)
    return Plot(name=name, file=f"{name}.png", title=title, x_label=X_LABELS[by], y_label=y_label, series=series)


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
        _line(table, "throughput", "Output throughput against concurrency", "output tokens/s", "output_throughput"),
        _line(table, "tpot", "Median TPOT against concurrency", "median TPOT (ms)", "median_tpot_ms"),
        *[pareto_plot(table, _on(champion, w), per, w) for w in dict.fromkeys(r.workload for r in table.rows)],
        *rate_plots(table),
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


__all__ = ["draw", "pareto_plot", "plots_of", "rate_plots"]
