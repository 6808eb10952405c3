"""What an experiment's configs become before anything boots, as pure functions (a campaign's cells, an A/B's arms
alike): each made with the known-good entry found for it and the experiment's gates, no two booting one config,
every one benched by one client, prefix caching matched across engines.

    settled = settle("cell", wanted, found, alike=False)   # the configs made, what the entry did, the bench client
    client = one_bench_client("cell", runs)       # the client that benches every run; InputError if two would
    refuse_unmatched_caching("cell", runs)         # InputError naming each run's caching when engines differ in it

A run is (name, engine, serve config). Within one engine, prefix caching may be a lever like any other; across
engines it must be matched, or a prefix-cache (radix) replay can fake a win.

An experiment says what it wants (`Wanted`: a config's name, engine and model, and how it is made from the entry
found for it: a campaign's cell by policy/campaign.py's rules, an A/B's arm by policy/ab.py's); the target's part
(the entries found there, the widening, the memory model's prediction) is ops/experiment/prepare.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from redline.engines import get_engine
from redline.errors import InputError
from redline.models.known_good import KnownGoodUse
from redline.models.planned import PlannedConfig
from redline.models.serve import ServeConfig
from redline.policy import known_good as kg

P = TypeVar("P", bound=PlannedConfig)


# ---- runs set against each other: one bench client, prefix caching matched across engines -----------------------

NamedConfig = tuple[str, str, ServeConfig]  # (name, engine, serve config)


def engines_of(runs: Sequence[NamedConfig]) -> list[str]:
    """The engines the runs boot, in the order they first appear."""
    return list(dict.fromkeys(engine for _, engine, _ in runs))


def one_bench_client(what: str, runs: Sequence[NamedConfig]) -> str:
    """The client every run is benched by: one for all, so their figures compare by construction."""
    clients = {engine: get_engine(engine).bench_client for engine in engines_of(runs)}
    if len(set(clients.values())) > 1:
        listed = ", ".join(f"{engine}'s by {client}'s" for engine, client in clients.items())
        raise InputError(
            f"{what}s of {' and '.join(clients)} would be benched by different clients ({listed}): figures of two "
            "bench clients do not compare; set them against each other only where one client benches both"
        )
    return next(iter(clients.values()))


def _caching(engine: str, config: ServeConfig) -> str:
    on = "on" if get_engine(engine).prefix_caching(config) else "off"
    return f"{on} (set)" if config.enable_prefix_caching is not None else f"{on} (the engine's default)"


def refuse_unmatched_caching(what: str, runs: Sequence[NamedConfig]) -> None:
    """InputError when runs of different engines differ in whether they cache prefixes; nothing otherwise."""
    engines = engines_of(runs)
    if len(engines) < 2:
        return
    caching = {get_engine(engine).prefix_caching(config) for _, engine, config in runs}
    if len(caching) < 2:
        return
    listed = "; ".join(f"{name} ({engine}): {_caching(engine, config)}" for name, engine, config in runs)
    raise InputError(
        f"{what}s of {' and '.join(engines)} differ in prefix caching ({listed}): a comparison across engines "
        f"needs it matched, or a prefix-cache (radix) replay can fake a win; set enable_prefix_caching the same "
        f"for every {what}"
    )


@dataclass(frozen=True)
class Made(Generic[P]):
    """A config as it boots, and what the known-good entry did to it (None: no entry was looked up)."""

    planned: P
    use: KnownGoodUse | None = None


@dataclass(frozen=True)
class Wanted(Generic[P]):
    """One config an experiment wants to boot, before the known-good entry: `make` applies the entry found (None:
    none looked up) and the experiment's gates, and says what it boots."""

    name: str
    engine: str
    model: str
    make: Callable[[kg.Found | None], Made[P]]


@dataclass(frozen=True)
class Settled(Generic[P]):
    """The configs as they boot, in the order wanted; what the entry did to each it was looked up for; the client
    that benches them all."""

    configs: list[P]
    uses: dict[str, KnownGoodUse]
    client: str


def settle(
    what: str,
    wanted: Sequence[Wanted[P]],
    found: Callable[[Wanted[P]], kg.Found | None] | None = None,
    *,
    alike: bool,
) -> Settled[P]:
    """Each config made with the entry `found` for it (none: no entry looked up), refused where two boot one config
    (`alike`: two configs alike as given may be booted both, an A/B's A/A; only the entry's making two one is
    refused), one bench client for all, prefix caching matched across engines."""
    made = {w.name: w.make(found(w) if found is not None else None) for w in wanted}
    given = {w.name: w.make(None).planned.serve for w in wanted} if found is not None else None
    refuse_twins(what, [m.planned for m in made.values()], given, _uses(made), alike=alike)
    configs = [m.planned for m in made.values()]
    runs = [(c.name, c.engine, c.serve) for c in configs]
    client = one_bench_client(what, runs)
    refuse_unmatched_caching(what, runs)
    return Settled(configs, _uses(made), client)


def _uses(made: Mapping[str, Made[P]]) -> dict[str, KnownGoodUse]:
    return {name: m.use for name, m in made.items() if m.use is not None}


def refuse_twins(
    what: str,
    configs: Sequence[PlannedConfig],
    given: Mapping[str, object] | None,
    uses: Mapping[str, KnownGoodUse],
    *,
    alike: bool,
) -> None:
    """InputError where two configs boot one serve config (and engine): named as the known-good entry's doing where
    they differed as `given` (made without it), else as twins unless `alike` allows them."""
    seen: dict[str, str] = {}
    for config in configs:
        key = config.engine + config.serve.model_dump_json()
        first = seen.setdefault(key, config.name)
        if first == config.name:
            continue
        if given is not None and given[first] != given[config.name]:
            use = next((u for u in (uses.get(first), uses.get(config.name)) if u is not None and u.applied), None)
            raise InputError(
                f"{what}s {first!r} and {config.name!r} boot the same serve config once the known-good entry is "
                f"applied ({use.note if use is not None else 'the entry'}): set the knob they differ in on both, or "
                "pass skip_known_good=true"
            )
        if not alike:
            raise InputError(
                f"{what}s {first!r} and {config.name!r} boot the same serve config (after the gates): drop one, or "
                "make them differ"
            )


__all__ = [
    "Made",
    "NamedConfig",
    "Settled",
    "Wanted",
    "engines_of",
    "one_bench_client",
    "refuse_twins",
    "refuse_unmatched_caching",
    "settle",
]
