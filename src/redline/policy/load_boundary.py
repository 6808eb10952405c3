"""The load boundary inside one boot: the highest concurrency (or request rate) whose SLA holds, found by probing,
not by a fixed list.

Probes double from the lowest load until the SLA fails (or the highest allowed is reached), then bisect between the
last that held and the first that failed until they are within PRECISION of each other (or, for concurrencies, one
apart; rates bisect to a thousandth of a request per second at the finest). A rate the bench client could not send
(its `rate` check failed) is not judged: the probing stops there, and the boundary is not known above what the client
can send. A probe counts once its repeats agree (every repeat holds, or every one fails); repeats that
disagree ask for one more, and a probe still split after MAX_REPEATS counts as failed and is said to be unstable.
The answer names the boundary, the binding limit (the SLA metric furthest over its limit at the first failing
probe) and flags a cliff: the binding metric more than CLIFF times worse at the failing probe than at the boundary,
although the load only rose by the bisection's step. Pure: each step is a function of the probes so far.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from redline.models.load import RATE_DECIMALS, Load
from redline.models.load_boundary import MAX_REPEATS, Axis, BoundarySpec, LoadBoundary

PRECISION = 0.05  # the boundary is known to 5% of its value
FINEST_RATE = 0.001  # requests/s: rates are said to 3 decimals
CLIFF = 2.0
FAILED = float("inf")  # every SLA metric of a bench that measured nothing usable: it did not hold


@dataclass(frozen=True)
class Probe:
    """One bench at a load (a concurrency, or a rate): the SLA metrics it measured (lower is better, as latencies
    are); `unjudged`: why it is not judged (its client could not send the rate asked)."""

    concurrency: float  # the load's value on its axis: a concurrency, or a rate (requests/s)
    figures: Mapping[str, float]
    unjudged: str | None = None

    @property
    def at(self) -> float:
        return self.concurrency


@dataclass(frozen=True)
class Next:
    concurrency: float  # the next load's value on its axis
    why: str
    by: Axis = "concurrency"

    @property
    def load(self) -> Load:
        return Load(rate=self.concurrency) if self.by == "rate" else Load(concurrency=int(self.concurrency))


def probe(
    at: float, metrics: Mapping[str, float] | None, sla: Mapping[str, float], unjudged: str | None = None
) -> Probe:
    """A bench as a probe: its SLA metrics, or every one failed where it measured nothing usable (metrics None)."""
    figures = {m: FAILED for m in sla} if metrics is None else {m: metrics[m] for m in sla if m in metrics}
    return Probe(at, figures, unjudged)


def _said(value: float, by: Axis) -> str:
    return f"{value:g} req/s" if by == "rate" else f"{value:g}"


def _meets_sla(figures: Mapping[str, float], sla: Mapping[str, float]) -> bool:
    return all(figures.get(metric, float("inf")) <= limit for metric, limit in sla.items())


def _held(probes: Sequence[Probe], sla: Mapping[str, float], repeats: int) -> dict[float, bool | None]:
    """Each probed load: True (held), False (failed, or still split after MAX_REPEATS), None (undecided)."""
    runs: dict[float, list[bool]] = {}
    for p in probes:
        runs.setdefault(p.concurrency, []).append(_meets_sla(p.figures, sla))
    out: dict[float, bool | None] = {}
    for c, seen in runs.items():
        if len(seen) >= repeats and len(set(seen)) == 1:
            out[c] = seen[0]
        elif len(seen) >= MAX_REPEATS:
            out[c] = False
        else:
            out[c] = None
    return out


def _binding(probes: Sequence[Probe], c: float, sla: Mapping[str, float]) -> tuple[str, float]:
    """The SLA metric furthest over (or nearest to) its limit at load c, and its worst ratio to the limit."""
    at = [p for p in probes if p.concurrency == c]
    ratios = {m: max(p.figures.get(m, float("inf")) for p in at) / limit for m, limit in sla.items()}
    metric = max(ratios, key=lambda m: ratios[m])
    return metric, ratios[metric]


def _boundary(by: Axis, good: float | None, **rest: object) -> LoadBoundary:
    """A boundary at `good` on its axis (None: not even the lowest held)."""
    at = {"rate": good, "concurrency": None} if by == "rate" else {"concurrency": None if good is None else int(good)}
    return LoadBoundary.model_validate({**rest, **at, "by": by})


def _answer(
    probes: Sequence[Probe], sla: Mapping[str, float], good: float | None, bad: float | None, by: Axis
) -> LoadBoundary:
    n = len(probes)
    what = "request rate" if by == "rate" else "concurrency"
    if good is None:
        metric = _binding(probes, bad, sla)[0] if bad is not None else None
        why = f"the SLA failed already at the lowest {what} ({metric})"
        return _boundary(by, None, finished=True, binding=metric, cliff=False, probes=n, why=why)
    if bad is None:
        why = f"the SLA held up to the highest {what} allowed, {_said(good, by)}"
        return _boundary(by, good, finished=True, binding=None, cliff=False, probes=n, why=why)
    metric, over = _binding(probes, bad, sla)
    _, under = _binding(probes, good, sla)
    cliff = over > CLIFF * under and over > 1.0
    said = f"the SLA holds at {_said(good, by)} and fails at {_said(bad, by)}: {metric} binds"
    why = said + (f" (a cliff: {over / under:.1f}x worse in one step)" if cliff else "")
    return _boundary(by, good, finished=True, binding=metric, cliff=cliff, probes=n, why=why)


def _unjudged(probes: Sequence[Probe], good: float | None, by: Axis) -> LoadBoundary:
    """The probing stopped at a load its client could not send: the boundary is not known above what it sent."""
    first = min((p for p in probes if p.unjudged is not None), key=lambda p: p.concurrency)
    held = f"; the highest that held below it: {_said(good, by)}" if good is not None else ""
    why = f"not judged at {_said(first.concurrency, by)}: {first.unjudged}{held}"
    return _boundary(by, good, finished=False, binding=None, cliff=False, probes=len(probes), why=why)


def _close(good: float, bad: float, by: Axis) -> bool:
    if by == "rate":
        return bad - good <= max(FINEST_RATE, PRECISION * good)
    return bad - good <= max(1, int(PRECISION * good))


def _mid(good: float, bad: float, by: Axis) -> float:
    return round((good + bad) / 2, RATE_DECIMALS) if by == "rate" else float((int(good) + int(bad)) // 2)


def decide(
    probes: Sequence[Probe],
    sla: Mapping[str, float],
    *,
    lowest: float = 1,
    highest: float = 1024,
    repeats: int = 2,
    by: Axis = "concurrency",
) -> Next | LoadBoundary:
    """The next load to bench (a concurrency, or a rate), or the boundary once it is known to PRECISION."""
    verdicts = _held([p for p in probes if p.unjudged is None], sla, repeats)
    held = [c for c, v in verdicts.items() if v]
    good = max(held, default=None)
    if any(p.unjudged is not None for p in probes):
        return _unjudged(probes, good, by)
    undecided = sorted(c for c, v in verdicts.items() if v is None)
    if undecided:
        return Next(undecided[0], f"{_said(undecided[0], by)}: repeats disagree or are too few; one more", by)
    failed = [c for c, v in verdicts.items() if v is False]
    bad = min((c for c in failed if good is None or c > good), default=None)
    if not verdicts:
        return Next(lowest, f"the lowest {'request rate' if by == 'rate' else 'concurrency'} first", by)
    if good is None:
        return _answer(probes, sla, None, bad, by)
    if bad is None:
        if good >= highest:
            return _answer(probes, sla, good, None, by)
        up = min(2 * good, highest)
        return Next(up, f"the SLA held at {_said(good, by)}: double to {_said(up, by)}", by)
    if _close(good, bad, by):
        return _answer(probes, sla, good, bad, by)
    mid = _mid(good, bad, by)
    return Next(
        mid, f"the SLA holds at {_said(good, by)} and fails at {_said(bad, by)}: bisect at {_said(mid, by)}", by
    )


def next_probe(probes: Sequence[Probe], sla: Mapping[str, float], spec: BoundarySpec) -> Next | LoadBoundary:
    return decide(probes, sla, lowest=spec.lowest, highest=spec.highest, repeats=spec.repeats, by=spec.by)


def boundary_of(probes: Sequence[Probe], sla: Mapping[str, float], spec: BoundarySpec) -> LoadBoundary:
    """What the probes a cell ran say: the boundary, or, where the probing stopped short, what it still needed."""
    found = next_probe(probes, sla, spec)
    if isinstance(found, LoadBoundary):
        return found
    why = f"the probing stopped before the boundary was known (next: {found.why})"
    return _boundary(spec.by, None, finished=False, binding=None, cliff=False, probes=len(probes), why=why)


__all__ = ["Next", "Probe", "boundary_of", "next_probe", "probe", "decide"]
