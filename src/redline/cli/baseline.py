"""`redline baseline record|diff`: named baselines in baselines.yml, and a result diffed against one (GREEN, YELLOW,
RED). The flags are perf_baseline_record's and perf_baseline_diff's parameters; paths are inside --workspace."""

from __future__ import annotations

import argparse

from redline.cli.common import add_workspace_flags, print_result
from redline.cli.flags import add_request_flags, request_from_args
from redline.models.baseline import BaselineRecorded
from redline.ops.evidence import baseline as ops
from redline.ops.requests_evidence import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from redline.policy.baseline_diff import context_line


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("baseline", help="record a named baseline, or diff a result against one")
    actions = parser.add_subparsers(dest="baseline_command", required=True, metavar="ACTION")
    record = actions.add_parser("record", help="record a campaign cell, an A/B arm or a bench file as a baseline")
    add_request_flags(record, PerfBaselineRecordRequest)
    add_workspace_flags(record)
    record.set_defaults(handler=_run_record)
    diff = actions.add_parser("diff", help="diff a result against a baseline: GREEN, YELLOW or RED (exit 1 on RED)")
    add_request_flags(diff, PerfBaselineDiffRequest)
    add_workspace_flags(diff)
    diff.set_defaults(handler=_run_diff)


def recorded_text(r: BaselineRecorded) -> str:
    lines = [
        f"{'replaced' if r.replaced else 'recorded'} baseline {r.name} in {r.path}, from {r.baseline.source.describe()}"
    ]
    for p in r.baseline.points:
        tp = p.metrics.get("output_throughput")
        sol = (
            f"{p.sol.pct_of_ceiling:.1f}% of SoL [{p.sol.key}]"
            if p.sol and p.sol.pct_of_ceiling is not None
            else "no SoL ceiling"
        )
        figure = f"{tp.mean:,.1f} tok/s" if tp else "-"
        lines.append(f"  {figure}, {sol}; {context_line(p.context)}")
    return "\n".join(lines)


def _run_record(args: argparse.Namespace) -> int:
    result = ops.perf_baseline_record(args.workspace.resolve(), request_from_args(PerfBaselineRecordRequest, args))
    print_result(args, result, recorded_text)
    return 0


def _run_diff(args: argparse.Namespace) -> int:
    result = ops.perf_baseline_diff(args.workspace.resolve(), request_from_args(PerfBaselineDiffRequest, args))
    print_result(args, result, lambda r: r.text)
    return 1 if result.colour == "RED" else 0


__all__ = ["recorded_text", "register"]
