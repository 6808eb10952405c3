"""The spreads earlier boots measured, as a band for a run that measured none of its own (pure).

    earlier = earlier_noise(spreads, setup)     # metric -> Band, basis "earlier", said "from earlier boots"
    kept = spreads_of(setup, "campaigns/seqs.yml", noise, now)     # a run's measured bands, to keep in noise.yml

Several runs of one setup pool: cv^2 weighted by each one's degrees of freedom, their df summed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime

from redline.models.metrics import Band
from redline.models.spreads import Setup, Spread
from redline.policy.noise import measured_band


def _same(spread: Spread, setup: Setup) -> bool:
    return Setup.model_validate(spread.model_dump(include=set(Setup.model_fields))) == setup


def earlier_noise(spreads: Sequence[Spread], setup: Setup, besides: str = "") -> dict[str, Band]:
    """Each metric's band from the spreads kept for this setup (a run's own, `besides`, left out): pooled."""
    found: dict[str, list[Spread]] = {}
    for s in spreads:
        if _same(s, setup) and s.run != besides:
            found.setdefault(s.metric, []).append(s)
    out = {}
    for metric, kept in found.items():
        df = sum(s.df for s in kept)
        cv = math.sqrt(sum(s.cv**2 * s.df for s in kept) / df)
        runs = ", ".join(dict.fromkeys(s.run for s in kept))
        source = f"from earlier boots of {setup.describe()} ({runs}): a spread of {100 * cv:.2g}% (cv, {df} df)"
        out[metric] = measured_band(cv, df + 1, source, basis="earlier")
    return out


def spreads_of(setup: Setup, run: str, noise: Mapping[str, Band], now: datetime) -> list[Spread]:
    """The bands a run measured between its own boots, as spreads to keep for its setup."""
    return [
        Spread(**setup.model_dump(), metric=m, run=run, cv=b.cv, df=b.df, at=now)
        for m, b in sorted(noise.items())
        if b.basis == "measured" and b.cv is not None and b.df
    ]


def merged(kept: Sequence[Spread], run: str, new: Sequence[Spread]) -> list[Spread]:
    """The kept spreads with a run's replaced by what it measures now (a run measures again as it boots more)."""
    setups = {(s.model, s.engine, s.hardware, s.host) for s in new}
    stay = [s for s in kept if not (s.run == run and (s.model, s.engine, s.hardware, s.host) in setups)]
    return [*stay, *new]


__all__ = ["earlier_noise", "merged", "spreads_of"]
