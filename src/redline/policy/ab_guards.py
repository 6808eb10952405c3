"""Every metric an A/B reports, judged by the baseline diff's one judge (policy/baseline_diff.py): each arm against the
baseline arm on the same trials, focus and guarded metrics alike, with the diff's colours; pure.

    guards = guard_arms("ab/l8b.yml", arms, baseline="small", focus="output_throughput")
    guards[0].colour, guards[0].regressed   # "RED", ["median_tpot_ms worse by 163.92% at chat c=8"]

The A/B's verdict rests on its focus metric alone (policy/verdict.py); these say beside it what perf_baseline_diff
would say of the same arms, so the two never tell a different story.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redline.errors import InputError
from redline.models.ab import ArmSummary
from redline.models.baseline import BaselinePoint, Colour, PointDiff
from redline.models.guards import ArmGuard, GuardedPoint
from redline.models.load import load_of
from redline.policy.baseline_diff import (
    COLOUR_RANK,
    DEFAULT_GUARDED,
    Noise,
    compare_points,
    match_points,
    refuse_mismatch,
    worst_of,
)


def points_of(arm: ArmSummary) -> list[BaselinePoint]:
    """An arm's points as a baseline's (perf_baseline_record takes an A/B arm the same way)."""
    return [BaselinePoint(context=p.context, metrics=p.metrics, sol=p.sol) for p in arm.points]


def _where(p: PointDiff) -> str:
    name = p.current_context.workload.name
    return f"{name} {load_of(p).label}" if name else load_of(p).label


@dataclass(frozen=True)
class Compared:
    """Every metric of one config against another's (the one comparison, policy/baseline_diff.py compare_points):
    the worst point's colour and why, each guarded metric worse beyond its noise, each point's calls."""

    colour: Colour
    why: str
    regressed: list[str]
    points: list[GuardedPoint]


def compared(
    base: Sequence[BaselinePoint], current: Sequence[BaselinePoint], focus: str, noise: Noise | None
) -> Compared:
    """`current` against `base` on the focus and every guarded metric (DEFAULT_GUARDED), point by point, matched by
    workload and concurrency; InputError where no point matches."""
    pairs, _ = match_points(base, current)
    points = compare_points(pairs, focus, [g for g in DEFAULT_GUARDED if g != focus], noise=noise)
    worst, why = worst_of(points)
    regressed = [
        f"{m.metric} {m.noise.change if m.noise else m.status} at {_where(p)}"
        for p in points
        for m in p.metrics
        if m.role == "guarded" and m.status in ("regressed", "regressed_loose")
    ]
    said = [
        GuardedPoint(
            workload=p.current_context.workload.name,
            concurrency=p.concurrency,
            rate=p.rate,
            speedup=p.speedup,
            colour=p.colour,
            why=p.why,
            metrics=p.metrics,
        )
        for p in points
    ]
    return Compared(colour=worst.colour, why=why, regressed=regressed, points=said)


def guard_arm(ref: str, base: ArmSummary, arm: ArmSummary, focus: str) -> ArmGuard:
    """One arm against the baseline arm, every metric judged as the diff judges it (two contexts that differ on a
    comparable field are refused, as the diff refuses them)."""
    errors = f"{len(arm.trials_failed)} trial(s) failed: {arm.trials_failed[0]}" if arm.trials_failed else None
    errors = errors if len(arm.trials_failed) > len(base.trials_failed) else None
    which = {"arm": arm.arm, "against": base.arm, "errors": errors}
    if not base.points or not arm.points:
        why = f"not compared: {'the baseline arm' if not base.points else arm.arm} has no successful trial"
        return ArmGuard(**which, colour=None, why=why)
    try:
        refuse_mismatch(match_points(points_of(base), points_of(arm))[0])
        found = compared(points_of(base), points_of(arm), focus, None)
    except InputError as exc:  # contexts that differ on a comparable field (a regime): the diff refuses them
        return ArmGuard(**which, colour=None, why=f"not compared: {exc}")
    return ArmGuard(**which, colour=found.colour, why=found.why, regressed=found.regressed, points=found.points)


def guard_on(guard: ArmGuard, workload: str | None) -> ArmGuard:
    """One arm's guard on one named workload's points alone (None: every point): its colour the worst of them."""
    if workload is None or guard.colour is None:
        return guard
    points = [p for p in guard.points if p.workload == workload]
    if not points:
        return guard.model_copy(update={"colour": None, "why": f"not compared on {workload}", "regressed": []})
    worst = max(points, key=lambda p: COLOUR_RANK[p.colour])
    regressed = [
        f"{m.metric} {m.noise.change if m.noise else m.status} at {workload} {load_of(p).label}"
        for p in points
        for m in p.metrics
        if m.role == "guarded" and m.status in ("regressed", "regressed_loose")
    ]
    why = f"{worst.colour} at {workload} {load_of(worst).label}: {worst.why}"
    return guard.model_copy(update={"colour": worst.colour, "why": why, "regressed": regressed, "points": points})


def guard_arms(ref: str, arms: Sequence[ArmSummary], baseline: str, focus: str) -> list[ArmGuard]:
    """Every arm but the baseline against it (`ref`: the A/B's file, as a diff's source names it)."""
    base = next((a for a in arms if a.arm == baseline), None)
    if base is None:
        return []
    return [guard_arm(ref, base, arm, focus) for arm in arms if arm.arm != baseline]


def guards_said(guards: Sequence[ArmGuard]) -> str:
    """The guards in one sentence, beside the verdict: each arm's colour, every guarded metric worse beyond its noise
    and every failed trial named."""
    parts = []
    for g in guards:
        if g.colour is None:
            parts.append(f"{g.arm} {g.why}")
            continue
        worse = f": {'; '.join(g.regressed)}" if g.regressed else ": no guarded metric worse beyond its noise"
        parts.append(f"{g.arm} {g.colour}{worse}" + (f"; errors: {g.errors}" if g.errors else ""))
    return "Every metric, as perf_baseline_diff judges it: " + "; ".join(parts) if parts else ""


__all__ = ["Compared", "compared", "guard_arm", "guard_arms", "guard_on", "guards_said", "points_of"]
