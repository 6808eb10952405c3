"""The load boundary inside one boot: the highest concurrency whose SLA holds, found by probing, not by a fixed list.

Probes double from the lowest concurrency until the SLA fails (or the highest allowed is reached), then bisect
between the last that held and the first that failed until they are within PRECISION of each other (or one
apart). A probe counts once its repeats agree (every repeat holds, or every one fails); repeats that
disagree ask for one more, and a probe still split after MAX_REPEATS counts as failed and is said to be unstable.
The answer names the boundary, the binding limit (the SLA metric furthest over its limit at the first failing
probe) and flags a cliff: the binding metric more than CLIFF times worse at the failing probe than at the boundary,
although the load only rose by the bisection's step. Pure: each step is a function of the probes so far.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from redline.models.load_boundary import MAX_REPEATS, BoundarySpec, LoadBoundary

PRECISION = 0.05  # the boundary is known to 5% of its value
CLIFF = 2.0
FAILED = float("inf")  # every SLA metric of a bench that measured nothing usable: it did not hold


@dataclass(frozen=True)
class Probe:
    """One bench at a concurrency: the SLA metrics it measured (lower is better, as latencies are)."""

    concurrency: int
    figures: Mapping[str, float]


@dataclass(frozen=True)
class Next:
    concurrency: int
    why: str


def probe(concurrency: int, metrics: Mapping[str, float] | None, sla: Mapping[str, float]) -> Probe:
    """A bench as a probe: its SLA metrics, or every one failed where it measured nothing usable (metrics None)."""
    figures = {m: FAILED for m in sla} if metrics is None else {m: metrics[m] for m in sla if m in metrics}
    return Probe(concurrency, figures)


def _meets_sla(figures: Mapping[str, float], sla: Mapping[str, float]) -> bool:
    return all(figures.get(metric, float("inf")) <= limit for metric, limit in sla.items())


def _held(probes: Sequence[Probe], sla: Mapping[str, float], repeats: int) -> dict[int, bool | None]:
    """Each probed concurrency: True (held), False (failed, or still split after MAX_REPEATS), None (undecided)."""
    runs: dict[int, list[bool]] = {}
    for p in probes:
        runs.setdefault(p.concurrency, []).append(_meets_sla(p.figures, sla))
    out: dict[int, bool | None] = {}
    for c, seen in runs.items():
        if len(seen) >= repeats and len(set(seen)) == 1:
            out[c] = seen[0]
        elif len(seen) >= MAX_REPEATS:
            out[c] = False
        else:
            out[c] = None
    return out


def _binding(probes: Sequence[Probe], c: int, sla: Mapping[str, float]) -> tuple[str, float]:
    """The SLA metric furthest over (or nearest to) its limit at concurrency c, and its worst ratio to the limit."""
    at = [p for p in probes if p.concurrency == c]
    ratios = {m: max(p.figures.get(m, float("inf")) for p in at) / limit for m, limit in sla.items()}
    metric = max(ratios, key=lambda m: ratios[m])
    return metric, ratios[metric]


def _answer(probes: Sequence[Probe], sla: Mapping[str, float], good: int | None, bad: int | None) -> LoadBoundary:
    n = len(probes)
    if good is None:
        metric = _binding(probes, bad, sla)[0] if bad is not None else None
        why = f"the SLA failed already at the lowest concurrency ({metric})"
        return LoadBoundary(finished=True, concurrency=None, binding=metric, cliff=False, probes=n, why=why)
    if bad is None:
        why = f"the SLA held up to the highest concurrency allowed, {good}"
        return LoadBoundary(finished=True, concurrency=good, binding=None, cliff=False, probes=n, why=why)
    metric, over = _binding(probes, bad, sla)
    _, under = _binding(probes, good, sla)
    cliff = over > CLIFF * under and over > 1.0
    said = f"the SLA holds at {good} and fails at {bad}: {metric} binds"
    why = said + (f" (a cliff: {over / under:.1f}x worse in one step)" if cliff else "")
    return LoadBoundary(finished=True, concurrency=good, binding=metric, cliff=cliff, probes=n, why=why)


def decide(
    probes: Sequence[Probe], sla: Mapping[str, float], *, lowest: int = 1, highest: int = 1024, repeats: int = 2
) -> Next | LoadBoundary:
    """The next concurrency to bench, or the boundary once it is known to PRECISION."""
    verdicts = _held(probes, sla, repeats)
    undecided = sorted(c for c, v in verdicts.items() if v is None)
    if undecided:
        return Next(undecided[0], f"concurrency {undecided[0]}: repeats disagree or are too few; one more")
    held = [c for c, v in verdicts.items() if v]
    failed = [c for c, v in verdicts.items() if v is False]
    good = max(held, default=None)
    bad = min((c for c in failed if good is None or c > good), default=None)
    if not verdicts:
        return Next(lowest, "the lowest concurrency first")
    if good is None:
        return _answer(probes, sla, None, bad)
    if bad is None:
        if good >= highest:
            return _answer(probes, sla, good, None)
        up = min(2 * good, highest)
        return Next(up, f"the SLA held at {good}: double to {up}")
    if bad - good <= max(1, int(PRECISION * good)):
        return _answer(probes, sla, good, bad)
    mid = (good + bad) // 2
    return Next(mid, f"the SLA holds at {good} and fails at {bad}: bisect at {mid}")


def next_probe(probes: Sequence[Probe], sla: Mapping[str, float], spec: BoundarySpec) -> Next | LoadBoundary:
    return decide(probes, sla, lowest=spec.lowest, highest=spec.highest, repeats=spec.repeats)


def boundary_of(probes: Sequence[Probe], sla: Mapping[str, float], spec: BoundarySpec) -> LoadBoundary:
    """What the probes a cell ran say: the boundary, or, where the probing stopped short, what it still needed."""
    found = next_probe(probes, sla, spec)
    if isinstance(found, LoadBoundary):
        return found
    why = f"the probing stopped before the boundary was known (next: {found.why})"
    return LoadBoundary(finished=False, concurrency=None, binding=None, cliff=False, probes=len(probes), why=why)


__all__ = ["Next", "Probe", "boundary_of", "next_probe", "probe", "decide"]
