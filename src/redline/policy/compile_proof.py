"""The torch.compile cache a ladder proves its ceiling in: the one a deployment of the ceiling boots with.

A graph-mode vLLM boot compiles inside the profile run that sizes its KV cache, and vLLM counts what compiling held:
the same config holds fewer KV tokens on a cold compile cache than booted again on a warm one. A ladder's deployment
boots cold (a fresh deployment compiles) unless the ladder says it keeps its cache (`deployment_compile_cache`, from
its target's compile_cache_persists): then warm. So:

- cold: a rung every boot of which found a warm cache proves nothing for the deployment; before it is recorded it is
  replayed with the cache cold (the engine's cold_compile_env). A rung booted both ways is recorded with the lower
  KV cache (ops/ladder/ceiling.py), and says so;
- warm: a rung that compiled cold and held too few requests is replayed once, warm, before the climb gives up on it
  (a cold proof is kept as it is: it holds less than the deployment will).

Eager boots compile nothing: their ladders are as before. Pure: the route and the joint climb call it.
"""

from typing import Literal

from redline.engines import get_engine
from redline.models.boot import CompileCache
from redline.models.ladder import Ladder, NextStep, Rung
from redline.policy import steps
from redline.policy.rungs import is_bad, is_good, knobs, seen

Deployment = Literal["cold", "warm"]


def deployment(ladder: Ladder) -> Deployment:
    """The torch.compile cache the ladder's deployment boots with: cold unless it says warm."""
    return ladder.deployment_compile_cache or "cold"


def boots_of(ladder: Ladder, rung: Rung) -> list[Rung]:
    """The rung and its replays that booted and did not fail a smoke test: the boots that prove its config."""
    return [r for r in ladder.rungs if r.config == rung.config and r.status.booted and not r.smoke_test.failed]


def states_of(boots: list[Rung]) -> set[CompileCache | None]:
    return {r.signals.compile_cache for r in boots}


def _env(ladder: Ladder) -> str:
    return " ".join(f"{k}={v}" for k, v in get_engine(ladder.engine).cold_compile_env.items())


def _cold_replay(ladder: Ladder, rung: Rung, reason: str) -> NextStep:
    cold = get_engine(ladder.engine).cold_compile_env
    config = rung.serve.model_copy(update={"env": {**rung.serve.env, **cold}})
    why = (
        f"{reason}; but every boot of it found a warm torch.compile cache, and a fresh deployment compiles cold "
        f"(its profile counts what compiling held: fewer KV tokens): replay it with the cache cold "
        f"({_env(ladder)}) first"
    )
    return NextStep(route="run_rung", rung=config, climbs=rung.climbs, replay_of=rung.index, reason=why)


def said(ladder: Ladder, boots: list[Rung]) -> str:
    """The compile cache the proof booted in, in words ("" for eager boots, which compile nothing)."""
    states = states_of(boots) - {None, "unused"}
    if not states:
        return ""
    if deployment(ladder) == "warm":
        if "warm" in states:
            return "proven on a warm torch.compile cache, as its deployment keeps it"
        return "proven on a cold torch.compile cache, which holds less than its warm deployment will"
    if states == {"cold", "warm"}:
        return "booted on a cold and a warm torch.compile cache: the lower KV cache, cold's, is kept"
    return "proven on a cold torch.compile cache, as a fresh deployment boots"


def record(ladder: Ladder, rung: Rung, reason: str) -> NextStep:
    """Record `rung` as the ceiling, if its boots prove it in the deployment's compile cache; else the boot that
    would: a cold replay where every boot found a warm cache (and a diagnosis where its cold boots held too few)."""
    boots = boots_of(ladder, rung)
    states = states_of(boots)
    if deployment(ladder) == "cold" and states == {"warm"} and get_engine(ladder.engine).cold_compile_env:
        return _cold_replay(ladder, rung, reason)
    cold = [r for r in boots if r.signals.compile_cache == "cold"]
    if deployment(ladder) == "cold" and cold and not any(is_good(r, ladder.min_concurrency) for r in cold):
        return steps.diagnose(
            cold[-1],
            f"{reason}; but on a cold torch.compile cache (rung {cold[-1].index}) it held fewer than "
            f"{ladder.min_concurrency} request(s) of {rung.serve.max_model_len:,}: a fresh deployment holds less than "
            "a warm boot showed; lower max_model_len to what that boot says fits and start a new ladder",
        )
    words = said(ladder, boots)
    return steps.record(rung, f"{reason}; {words}" if words else reason)


def warm_retry(ladder: Ladder, last: Rung) -> NextStep | None:
    """For a deployment that keeps its cache: the last climbed rung, if it compiled cold and held too few requests,
    is replayed once, warm, before the climb takes what it says fits; None otherwise."""
    if deployment(ladder) != "warm" or last.signals.compile_cache != "cold" or not is_bad(last, ladder.min_concurrency):
        return None
    if not last.status.booted or any(r.replay_of == (last.replay_of or last.index) for r in ladder.rungs):
        return None
    original = last.replay_of or last.index
    return steps.replay(
        ladder.rungs[original - 1],
        f"rung {last.index} ({knobs(last)}) {seen(last)}, fewer than {ladder.min_concurrency} request(s), on a cold "
        "torch.compile cache it just compiled; its deployment keeps the cache warm, which holds more: replay rung "
        f"{original} warm, once",
    )


__all__ = ["Deployment", "boots_of", "deployment", "record", "said", "states_of", "warm_retry"]
