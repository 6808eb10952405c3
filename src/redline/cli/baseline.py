"""`redline baseline record|diff`: named baselines in baselines.yml, and a result diffed against one (GREEN, YELLOW,
RED). The flags are perf_baseline_record's and perf_baseline_diff's parameters; paths are inside --workspace."""

from __future__ import annotations

from redline.cli.common import Subparsers, command_actions, workspace_operation
from redline.models.baseline import BaselineDiff, BaselineRecorded
from redline.ops.evidence import baseline as ops
from redline.ops.requests_evidence import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from redline.policy.baseline_diff import context_line


def register(subparsers: Subparsers) -> None:
    actions = command_actions(subparsers, "baseline", "record a named baseline, or diff a result against one")
    record = actions.add_parser("record", help="record a campaign cell, an A/B arm or a bench file as a baseline")
    workspace_operation(record, PerfBaselineRecordRequest, ops.perf_baseline_record, recorded_text)
    diff = actions.add_parser("diff", help="diff a result against a baseline: GREEN, YELLOW or RED (exit 1 on RED)")
    workspace_operation(diff, PerfBaselineDiffRequest, ops.perf_baseline_diff, lambda r: r.text, _red)


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


def _red(diff: BaselineDiff) -> int:
    return 1 if diff.colour == "RED" else 0


__all__ = ["recorded_text", "register"]
