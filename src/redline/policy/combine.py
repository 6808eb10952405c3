"""One answer across named workloads, for a campaign's cell and an A/B's arm alike (METHODOLOGY.md rule 51); pure.

Each workload is judged alone first (a campaign ranks it, an A/B tests it), each by its own noise. Then `combine`:

- each (the default): no answer across them, each workload's own (outcome per_workload);
- all: a win only where it is a win on every workload; its gain is its smallest one, and the champion is the win
  whose smallest gain is largest. A win on one workload and a loss on another is mixed;
- weights: the weighted mean of the gains against the weighted mean of the workloads' noise bands: a win above it,
  worse below its negative, else no improvement.

Anything missing or not ranked on one workload is not ranked across them: every workload present, or no answer.

    found = across(Weights(weights={"chat": 3, "long": 1}), [OnWorkload("chat", "win", 12.0, 4.0, ""), ...])
    found.call, found.gain, found.why
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from redline.models.workloads import Combine, Weights

Call = Literal["baseline", "win", "worse", "mixed", "no_improvement", "not_ranked"]
SAID = {"all": "a win on every workload (its gain its smallest one)", "each": "one answer per workload"}


@dataclass(frozen=True)
class OnWorkload:
    """One config's call on one workload, its gain (% better than the baseline) and its noise band there (%)."""

    workload: str
    call: Call
    gain: float | None
    band: float | None
    why: str = ""


@dataclass(frozen=True)
class Across:
    """One config's call across the workloads by the rule, its gain and band there, and why."""

    call: Call
    gain: float | None
    band: float | None
    why: str


def rule_of(combine: Combine) -> str:
    """The rule in words: each, all, or weights with each workload's weight."""
    if isinstance(combine, Weights):
        return "weights " + ", ".join(f"{w} {x:g}" for w, x in combine.weights.items())
    return combine


def scoring(combine: Combine) -> str:
    return SAID.get(rule_of(combine), "the weighted mean of the gains against the weighted mean of the noise bands")


def _said(found: Sequence[OnWorkload]) -> str:
    return ", ".join(
        f"{f.workload} {f.gain:+.1f}% ({f.call.replace('_', ' ')})" if f.gain is not None else f"{f.workload} {f.call}"
        for f in found
    )


def _all(found: Sequence[OnWorkload], said: str) -> Across:
    calls = {f.call for f in found}
    if calls == {"win"}:
        call: Call = "win"
    elif "mixed" in calls or {"win", "worse"} <= calls:
        call = "mixed"
    elif "worse" in calls:
        call = "worse"
    else:
        call = "no_improvement"
    gain = min(float(f.gain or 0.0) for f in found)
    why = f"{said}: {'a win on every workload' if call == 'win' else 'not a win on every workload'}"
    return Across(call, round(gain, 3), None, why)


def _weighted(found: Sequence[OnWorkload], weights: Weights, said: str) -> Across:
    if any(f.band is None for f in found):
        return Across("not_ranked", None, None, f"{said}: a workload has no noise band")
    total = sum(weights.weights.values())
    gain = sum(weights.weights[f.workload] * float(f.gain or 0.0) for f in found) / total
    band = sum(weights.weights[f.workload] * float(f.band or 0.0) for f in found) / total
    call: Call = "win" if gain > band else "worse" if gain < -band else "no_improvement"
    why = f"{said}: weighted gain {gain:+.2f}% against a weighted noise band of {band:.2f}%"
    return Across(call, round(gain, 3), round(band, 3), why)


def across(combine: Combine, found: Sequence[OnWorkload]) -> Across:
    """One config across the workloads by `combine` (all or weights; each names no answer across them)."""
    if combine == "each":
        return Across("not_ranked", None, None, "each workload its own answer (combine: each)")
    if found and all(f.call == "baseline" for f in found):
        return Across("baseline", None, None, "the baseline, on every workload")
    lacking = [f"{f.workload}: {f.why or f.call}" for f in found if f.call == "not_ranked" or f.gain is None]
    if lacking:
        return Across("not_ranked", None, None, "not ranked on every workload: " + "; ".join(lacking))
    said = _said(found)
    return _weighted(found, combine, said) if isinstance(combine, Weights) else _all(found, said)


def champion_of(found: Mapping[str, Across]) -> str | None:
    """The config the rule crowns: the win with the largest gain (for all: the largest smallest gain)."""
    wins = [(name, a.gain or 0.0) for name, a in found.items() if a.call == "win"]
    return max(wins, key=lambda w: w[1])[0] if wins else None  # the first of equals, in the order given


__all__ = ["Across", "Call", "OnWorkload", "across", "champion_of", "rule_of", "scoring"]
