"""`redline ab run`: A/B two or more serve configs on one target, a clean boot per arm per trial, VERDICT or DRAFT;
`redline ab apply`: its closed champion written into the deploy's values file.

The flags are ab_run's parameters (the same request model), but the spec is read from a file
(--spec-file, YAML or JSON: the ab/<name>.yml a run writes is one), and the workspace is a folder
(--workspace, default: here) that holds ab/, campaigns/, known-good.yml.
"""

from __future__ import annotations

import argparse
import shlex
from functools import partial
from pathlib import Path

from redline.cli.baseline import recorded_text
from redline.cli.common import (
    LOCAL,
    Subparsers,
    add_config_flag,
    add_workspace_flags,
    command_actions,
    experiment_run,
    print_result,
    target_named,
)
from redline.cli.flags import add_request_flags, request_from_args
from redline.inputs import load_yaml
from redline.models.ab import AbPlan, AbResult, AbSpec
from redline.models.deploy import ChampionApplied
from redline.models.lever import Lever
from redline.ops.ab import apply as apply_ops
from redline.ops.ab import run as ops
from redline.ops.requests import AbRunRequest
from redline.ops.requests_evidence import ChampionApplyRequest


def register(subparsers: Subparsers) -> None:
    actions = command_actions(
        subparsers, "ab", "A/B serve configs on one node: clean boots, interleaved trials, a verdict"
    )
    run = actions.add_parser("run", help="run an A/B (needs --i-understand-this-submits-jobs; --dry-run lists it)")
    run.add_argument("--spec-file", type=Path, required=True, help="the A/B spec, YAML or JSON (such as ab/NAME.yml)")
    add_request_flags(run, AbRunRequest, skip=("spec",))
    add_workspace_flags(run)
    run.add_argument("--targets", type=Path, help=f"the targets file (default: this host as `{LOCAL}`)")
    add_config_flag(run)  # the server config's widening, as `redline mcp --config` applies it (and campaign run)
    run.set_defaults(handler=_run_ab)
    apply = actions.add_parser(
        "apply", help="write a closed champion into the deploy's values file (--dry-run first: its diff and diff_id)"
    )
    add_request_flags(apply, ChampionApplyRequest)
    add_workspace_flags(apply)
    apply.set_defaults(handler=_run_apply)


def _run_ab(args: argparse.Namespace) -> int:
    spec = load_yaml(args.spec_file, AbSpec, "A/B spec")
    request = request_from_args(AbRunRequest, args, spec=spec)
    run = partial(ops.ab_run, args.workspace.resolve(), spec)
    result = experiment_run(args, request, "ab_run", lambda: target_named(args.targets, spec.target), run)
    print_result(args, result, ab_text)
    return 0


def _run_apply(args: argparse.Namespace) -> int:
    result = apply_ops.champion_apply(args.workspace.resolve(), request_from_args(ChampionApplyRequest, args))
    print_result(args, result, applied_text)
    return 0


# ---- text ------------------------------------------------------------------------------------------------------


def applied_text(r: ChampionApplied) -> str:
    done = "wrote" if r.written else ("would write" if not r.baseline else "left as it was")
    lines = [f"{done} A/B {r.ab}'s champion {r.champion} into {r.values} ({r.args_key}): {' '.join(r.flags)}"]
    lines += [f"  {c}" for c in r.changes] + [f"  left out {item}" for item in r.left_out]
    lines += [r.diff.rstrip("\n")] if r.diff else []
    lines += [recorded_text(r.baseline)] if r.baseline else [f"diff_id {r.diff_id}"]
    return "\n".join([*lines, f"next: {r.next}"])


def _plan_text(plan: AbPlan) -> str:
    lines = [f"A/B {plan.ab} on {plan.target}: {plan.boots} boots to run ({plan.note})", plan.known_good.note]
    for arm in plan.arms:
        lines.append(
            f"arm {arm.name}{' (baseline)' if arm.baseline else ''} [{arm.engine}]: {shlex.join(arm.boot_command)}"
        )
        lines += [f"  gate {g}" for g in arm.gates]
    for step in plan.trials:
        lines.append(
            f"{step.order:3}. {step.arm}-{step.trial}{' (done)' if step.done else ''}: boot, "
            f"{'warm up, ' if step.warmup_command else ''}bench x {len(step.bench_commands)}, stop"
        )
        lines += [f"     bench {shlex.join(cmd)}" for cmd in step.bench_commands]
    return "\n".join(lines)


def levers_text(levers: list[Lever]) -> list[str]:
    if not levers:
        return ["next lever: none applies; document the speed-of-light wall reached"]
    lines = ["next levers (predicted gains, best per cost first):"]
    for i, lever in enumerate(levers, 1):
        lines.append(
            f"  {i}. {lever.lever}: {lever.change}; {lever.expected}; cost {lever.cost} ({lever.cost_boots} boots)"
        )
        lines.append(f"     gate: {lever.gate}")
    return lines


def ab_text(result: AbResult) -> str:
    if result.plan is not None:
        return "\n".join([_plan_text(result.plan), result.summary, f"next: {result.next}"])
    lines = [result.summary, result.known_good.note]
    for arm in result.arms:
        lines.append(
            f"arm {arm.arm}{' (baseline)' if arm.baseline else ''} [{arm.engine}]: {arm.trials_ok} trials ok"
            + (f"; failed: {'; '.join(arm.trials_failed)}" if arm.trials_failed else "")
        )
        for point in arm.points:
            stats = ", ".join(
                f"{m} {s.mean:,.2f}" + (f" ± {s.std:,.2f}" if s.std is not None else "")
                for m, s in point.metrics.items()
            )
            sol = (
                f"{point.sol.pct_of_ceiling:.1f}% of SoL [{point.sol.key}]"
                if point.sol.pct_of_ceiling is not None
                else point.sol.basis
            )
            lines.append(f"  c={point.concurrency} (n={len(point.trials)}): {stats}; {sol}")
    if result.verdict is not None:
        lines += [f"rule {r.rule}: {'held' if r.held else 'FAILED'}: {r.why}" for r in result.verdict.rules]
        lines += [
            f"  {c.arm} vs {c.baseline} at c={c.concurrency}: {c.outcome}: {c.why}" for c in result.verdict.comparisons
        ]
    if result.close is not None:
        state = "closed" if result.close.closed else "not closed: " + "; ".join(result.close.missing)
        lines.append(f"champion {result.close.champion}: {state}")
    lines.append(f"next: {result.next}")
    return "\n".join(lines + levers_text(result.next_levers))


__all__ = ["ab_text", "levers_text", "register"]
