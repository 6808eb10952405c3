"""`redline campaign init|plan|run|status|aggregate|champion|report`: tune a deploy with a grid of serve configs,
each booted once and benched at every concurrency. The flags are the MCP tools' parameters (the same request
models); the campaign file is a local path (--campaign)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from redline.cli.common import (
    LOCAL,
    Subparsers,
    add_config_flag,
    command_actions,
    experiment_run,
    print_result,
    target_named,
    widenings_from,
)
from redline.cli.flags import add_request_flags, request_from_args
from redline.models.campaign_plan import CampaignPlan, CellPlan
from redline.models.campaign_results import CampaignRunResult, CampaignStatus, CampaignTable, ChampionReport
from redline.models.search import SearchState
from redline.models.workloads import load_of
from redline.ops.campaign import plan as plan_ops
from redline.ops.campaign import results
from redline.ops.campaign import run as run_ops
from redline.ops.campaign.report import campaign_report
from redline.ops.request_base import Request
from redline.ops.requests import (
    CampaignAggregateRequest,
    CampaignInitRequest,
    CampaignPlanRequest,
    CampaignReportRequest,
    CampaignRunRequest,
    CampaignStatusRequest,
    ChampionSelectRequest,
)
from redline.targets import Target, load_targets


def register(subparsers: Subparsers) -> None:
    actions = command_actions(
        subparsers, "campaign", "tune a deploy: a grid of serve configs, each booted once and benched (campaign.yml)"
    )
    for name, request, text, handler, targets in _ACTIONS:
        sub = actions.add_parser(name, help=text)
        sub.add_argument("--campaign", type=Path, required=True, help="the campaign file (campaign.yml)")
        add_request_flags(sub, request)  # the MCP tool's parameters, from one model
        if targets:
            sub.add_argument("--targets", type=Path, help=f"the targets file (default: this host as `{LOCAL}`)")
            add_config_flag(sub)  # the server config's widening, as `redline mcp --config` applies it
        if name != "init":
            sub.add_argument("--json", action="store_true", help="print one JSON object")
        sub.set_defaults(handler=handler)


# ---- the handlers --------------------------------------------------------------------------------------------


def _init(args: argparse.Namespace) -> int:
    request = request_from_args(CampaignInitRequest, args)
    created = plan_ops.campaign_init(args.campaign, request)
    plan = created.plan
    print(
        "\n".join(
            [
                f"created {args.campaign}: {created.name} on {created.target}, {len(plan.cells)} cells x "
                f"{len(plan.concurrencies)} concurrencies ({plan.boots} boots)",
                f"base: {created.base_from}",
                plan_text(plan),
                f"known-good: {created.known_good}",
                "next: redline campaign run --dry-run (every command on the target, the known-good entry applied)",
            ]
        )
    )
    return 0


def _plan(args: argparse.Namespace) -> int:
    request = request_from_args(CampaignPlanRequest, args)
    target = _target(args, request.target) if args.targets or request.target else None
    plan = plan_ops.campaign_plan(args.campaign, request, target=target, widening=widenings_from(args))
    print_result(args, plan, plan_text)
    return 0


def _run(args: argparse.Namespace) -> int:
    request = request_from_args(CampaignRunRequest, args)
    run = partial(run_ops.campaign_run, args.campaign)
    result = experiment_run(args, request, "campaign_run", lambda: _target(args, request.target), run)
    print_result(args, result, run_text)
    return 1 if result.stopped_early else 0


def _read(
    operation: Callable[[Path, Any], BaseModel], request: type[Request], render: Callable[[Any], str]
) -> Callable[[argparse.Namespace], int]:
    """A campaign read as its command: the request from the flags, the answer printed (status, aggregate,
    champion)."""

    def run(args: argparse.Namespace) -> int:
        print_result(args, operation(args.campaign, request_from_args(request, args)), render)
        return 0

    return run


def _report(args: argparse.Namespace) -> int:
    report = campaign_report(args.campaign, request_from_args(CampaignReportRequest, args))
    folder = Path(report.report).parent
    print_result(
        args,
        report,
        lambda r: "\n".join(
            [f"wrote {r.report}", *(f"wrote {folder / p.file}" for p in r.plots), champion_headline(r.champion)]
        ),
    )
    return 0


def _target(args: argparse.Namespace, requested: str) -> Target:
    """The target named (else the campaign's), from --targets; with no targets file only this host, as local."""
    if args.targets is not None:
        return plan_ops.open_campaign_target(args.campaign, load_targets(args.targets), requested)
    return target_named(None, plan_ops.campaign_target(args.campaign, requested))


# ---- text ------------------------------------------------------------------------------------------------------


def _n(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _cell_lines(cell: CellPlan) -> list[str]:
    levers = ", ".join(f"{k}={v}" for k, v in cell.levers.items()) or "the base config"
    done = f", done: {cell.done}" if cell.done else ""
    lines = [
        f"cell {cell.index} {cell.name}{' (baseline)' if cell.baseline else ''} [{cell.engine}, {cell.regime.label}]: "
        f"{levers}{done}"
    ]
    lines += [f"  gate    {g}" for g in cell.gates]
    lines.append(f"  boot    {shlex.join(cell.boot_command)}")
    if cell.warmup_command:
        lines.append(f"  warm-up {shlex.join(cell.warmup_command)}")
    lines += [
        f"  bench   {load_of(b).label} repeat {b.repeat} ({b.num_prompts} prompts): {shlex.join(b.command)}"
        for b in cell.benches
    ]
    return lines


def plan_text(plan: CampaignPlan) -> str:
    head = (
        f"campaign {plan.campaign} on {plan.target} ({' and '.join(plan.engines)}, benched by {plan.bench_client}'s "
        f"client), focus {plan.focus}, baseline {plan.baseline}: "
        f"{plan.boots} boots, {plan.benches} benches to run"
        + (f", {plan.parallel} cells at once" if plan.parallel > 1 else "")
    )
    more = [f"noise: {plan.noise}"] if plan.noise else []
    more += search_lines(plan.search) if plan.search is not None else []
    return "\n".join([head, *(line for cell in plan.cells for line in _cell_lines(cell)), *more, plan.note])


def search_lines(search: SearchState) -> list[str]:
    """The search as its JSON holds it: its budget and spend, each proposal and why, its stop, what a resume does."""
    budget = (
        ", ".join(
            b
            for b in (
                search.budget_boots and f"{search.budget_boots} boots",
                search.budget_gpu_s and f"{search.budget_gpu_s:g} GPU-seconds",
            )
            if b
        )
        or "the grid"
    )
    lines = [f"search: budget {budget}; booted {search.booted} cells, {search.gpu_s:.0f} GPU-seconds"]
    lines += [f"  step {p.step}: {p.cell or 'stop'}: {p.why}" for p in search.proposals]
    if search.stopped:
        lines.append(f"  stopped: {search.stopped}")
    return [*lines, f"  resume: {search.resume}"]


def run_text(result: CampaignRunResult) -> str:
    if result.dry_run and result.plan is not None:
        return f"{plan_text(result.plan)}\n{result.reason}\nnext: {result.next}"
    lines = [
        f"{o.cell}{f' (boot {o.replicate})' if o.replicate > 1 else ''}: {o.verdict} ({o.reason}), "
        f"boot {_n(o.boot_s, 0)}s, {o.wall_s:.0f}s in all"
        for o in result.ran
    ]
    if result.skipped:
        lines.append(f"skipped (already done): {', '.join(result.skipped)}")
    return "\n".join([*lines, f"{result.reason}; {result.boots} boots", f"next: {result.next}"])


def status_text(status: CampaignStatus) -> str:
    lines = [
        f"campaign {status.campaign}: {status.done} of {status.total} cells done ({status.green} green, "
        f"{status.red} red); results in {status.results}"
    ]
    lines += [f"  {c.cell:<24} {c.state:<8} {c.reason or ''}".rstrip() for c in status.cells]
    if status.running:
        lines.append(f"running: {', '.join(status.running)}")
    lines += [f"noise: {status.noise}"] if status.noise else []
    lines += search_lines(status.search) if status.search is not None else []
    return "\n".join([*lines, f"next: {status.next}"])


def table_text(table: CampaignTable) -> str:
    head = ("cell", "load", "verdict", "regime", table.focus_metric, "out tok/s", "TPOT ms", "ok", "SLA")
    rows = [head] + [
        (
            r.cell + (f" on {r.workload}" if r.workload else ""),
            load_of(r).label,
            r.verdict,
            r.regime,
            _n(r.focus_value) + (f" ± {_n(r.focus_std)}" if r.focus_std is not None else ""),
            _n(r.output_throughput, 1),
            _n(r.median_tpot_ms),
            "yes" if r.ok else "NO",
            "ok" if r.sla_ok else "BREACH",
        )
        for r in table.rows
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if table.missing:
        lines.append(f"no verdict yet: {', '.join(table.missing)}")
    return "\n".join([f"{table.focus_metric} ({table.direction} is better)", *lines])


def champion_headline(report: ChampionReport) -> str:
    if report.champion:
        won = f", {report.champion_engine} won" if len(report.engines) > 1 else ""
        return f"champion {report.champion} (DRAFT{won}) by {report.metric}"
    return f"{report.outcome.replace('_', ' ')} (baseline {report.baseline})"


def champion_text(report: ChampionReport) -> str:
    lines = [champion_headline(report), f"scoring: {report.scoring}", report.note]
    lines += [f"  {c.cell:<24} {c.engine or '-':<8} {c.outcome:<15} {_n(c.score)}  {c.why}" for c in report.ranked]
    for group in report.other_regimes:
        lines += [f"regime {group.regime}: {group.note}", *(f"  {c.cell:<24} {_n(c.score)}" for c in group.cells)]
    lines += [f"  {c.cell:<24} excluded        {c.why}" for c in report.excluded]
    for each in report.workloads:
        lines += [f"workload {each.workload}: {champion_headline(each)}"]
        lines += [f"  {c.cell:<24} {c.outcome:<15} {_n(c.score)}  {c.why}" for c in each.ranked]
    return "\n".join(lines)


# ---- the actions ----------------------------------------------------------------------------------------------

_ACTIONS: list[tuple[str, type[Request], str, Callable[[argparse.Namespace], int], bool]] = [
    ("init", CampaignInitRequest, "write a new campaign file from --spec (JSON)", _init, False),
    (
        "plan",
        CampaignPlanRequest,
        "every boot and bench command a run would do, after the gates; starts nothing",
        _plan,
        True,
    ),
    (
        "run",
        CampaignRunRequest,
        "boot each cell once and bench it (needs --i-understand-this-submits-jobs)",
        _run,
        True,
    ),
    (
        "status",
        CampaignStatusRequest,
        "which cells are done, running or pending, and what to do next",
        _read(results.campaign_status, CampaignStatusRequest, status_text),
        False,
    ),
    (
        "aggregate",
        CampaignAggregateRequest,
        "the table of cells x concurrencies with the focus metric",
        _read(results.campaign_aggregate, CampaignAggregateRequest, table_text),
        False,
    ),
    (
        "champion",
        ChampionSelectRequest,
        "the champion under the SLA, or no improvement (always a DRAFT)",
        _read(results.champion_select, ChampionSelectRequest, champion_text),
        False,
    ),
    ("report", CampaignReportRequest, "write report.md and its PNG plots into the results folder", _report, False),
]

__all__ = ["champion_text", "plan_text", "register", "run_text", "status_text", "table_text"]
