"""Runs of more than one engine set against each other: one bench client, prefix caching matched. No I/O.

    client = one_bench_client("cell", runs)       # the client that benches every run; InputError if two would
    refuse_unmatched_caching("cell", runs)         # InputError naming each run's caching when engines differ in it

A run is (name, engine, serve config): a campaign's cell or an A/B's arm. Within one engine, prefix caching may be
a lever like any other; across engines it must be matched, or a prefix-cache (radix) replay can fake a win.
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.engines import get_engine
from redline.errors import InputError
from redline.models.serve import ServeConfig

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


__all__ = ["NamedConfig", "engines_of", "one_bench_client", "refuse_unmatched_caching"]
