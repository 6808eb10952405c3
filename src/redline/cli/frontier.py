"""`redline frontier`: the lever frontier (frontier.yml in --workspace): per model, hardware and engine version, the
levers an A/B tried and those not tried yet. The flags are lever_frontier's parameters."""

from __future__ import annotations

from redline.cli.common import Subparsers, workspace_operation
from redline.models.frontier import FrontierList
from redline.ops.evidence import frontier as ops
from redline.ops.requests_evidence import LeverFrontierRequest


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("frontier", help="the levers tried per model, hardware and engine, and those left")
    workspace_operation(parser, LeverFrontierRequest, ops.lever_frontier, frontier_text)


def frontier_text(answer: FrontierList) -> str:
    if not answer.frontiers:
        return f"no frontier in {answer.path} yet: ab_run starts one"
    lines = []
    for frontier, step in zip(answer.frontiers, answer.next, strict=True):
        lines.append(f"{frontier.model} on {frontier.hardware}, {frontier.engine} {frontier.engine_version or '?'}")
        lines += [f"  tried   {t.lever}: {t.outcome} ({t.run}; {t.why})" for t in frontier.tried]
        lines += [
            f"  untried {v.lever}: ~{v.expected_gain_pct:g}% predicted, {v.cost}; {v.gate}" for v in frontier.untried
        ]
        lines.append(f"  next    {step}")
    return "\n".join(lines)


__all__ = ["register"]
