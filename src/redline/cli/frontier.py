"""`redline frontier`: the lever frontier (frontier.yml in --workspace): per model, hardware and engine version, the
levers an A/B tried and those not tried yet. The flags are lever_frontier's parameters."""

from __future__ import annotations

import argparse

from redline.cli.common import add_workspace_flags, print_result
from redline.cli.flags import add_request_flags, request_from_args
from redline.models.frontier import FrontierList
from redline.ops.evidence import frontier as ops
from redline.ops.requests_evidence import LeverFrontierRequest


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("frontier", help="the levers tried per model, hardware and engine, and those left")
    add_request_flags(parser, LeverFrontierRequest)
    add_workspace_flags(parser)
    parser.set_defaults(handler=_run)


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


def _run(args: argparse.Namespace) -> int:
    result = ops.lever_frontier(args.workspace.resolve(), request_from_args(LeverFrontierRequest, args))
    print_result(args, result, frontier_text)
    return 0


__all__ = ["register"]
