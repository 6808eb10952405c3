"""The lever frontier, as pure decisions: which levers an arm tried against its baseline, the frontier after a run,
and what it says next.

    names = levers_tried(baseline_config, arm_config)        # ["fp8_kv_cache"], by the knobs that differ
    frontier = updated(frontier, tried, next_levers, now, under)  # tried merged by (lever, run); untried re-ranked
    say = said_next(frontier)                                   # the top untried lever, or why nothing is left

A lever leaves the untried list once a VERDICT judged it (improvement, no improvement, regression, mixed) where the
run now asking was tried (`covers`: the same eager or graphs regime, no higher a concurrency, no longer requests);
a DRAFT's or an untestable trial's lever stays a candidate, and so does one judged only somewhere narrower. "Nothing
left" is said only with an empty untried list, and with the tried levers that emptied it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from redline.models import ServeConfig
from redline.models.frontier import JUDGED, Frontier, TriedLever, TriedUnder
from redline.models.lever import Lever
from redline.policy.deploy_args import option

# a knob of the serve config -> the lever (policy/levers.py's names) a change of it tries
KNOB_LEVERS = {
    "enforce_eager": "cuda_graphs",
    "cudagraph_mode": "cuda_graphs",
    "max_num_seqs": "bigger_batch",
    "kv_cache_dtype": "fp8_kv_cache",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "tensor_parallel_size": "tensor_parallel",
}
# an extra flag's option (policy/deploy_args.option) -> its lever
FLAG_LEVERS = {"quantization": "fp8_weights", "speculative-config": "speculative_decoding"}


def levers_tried(baseline: ServeConfig, arm: ServeConfig) -> list[tuple[str, str]]:
    """(lever, change) for each way the arm differs from the baseline; a knob no lever names is its own lever."""
    found: dict[str, list[str]] = {}
    for knob in sorted(set(ServeConfig.model_fields) - {"model", "host", "port", "extra_flags", "env"}):
        before, after = getattr(baseline, knob), getattr(arm, knob)
        if before != after:
            found.setdefault(KNOB_LEVERS.get(knob, knob), []).append(f"{knob} {before} -> {after}")
    if baseline.model != arm.model:
        found.setdefault("fp8_weights" if "fp8" in arm.model.lower() else "model", []).append(
            f"model {baseline.model} -> {arm.model}"
        )
    for flag in sorted(set(arm.extra_flags) ^ set(baseline.extra_flags)):
        name = option(flag) or flag
        lever = FLAG_LEVERS.get(name.split(".")[0], name)
        found.setdefault(lever, []).append(("+ " if flag in arm.extra_flags else "- ") + flag)
    return [(lever, "; ".join(changes)) for lever, changes in found.items()]


def covers(tried: TriedLever, under: TriedUnder | None) -> bool:
    """Whether a lever's verdict holds where a run is now: the same regime, at least its top concurrency and its
    longest requests (an older record, or a run that says nothing of where it is: everywhere)."""
    was = tried.under
    if was is None or under is None:
        return True
    longer = (under.tokens_per_request or 0) > (was.tokens_per_request or 0)
    return was.graphs == under.graphs and was.top_concurrency >= under.top_concurrency and not longer


def _judged(tried: Sequence[TriedLever], under: TriedUnder | None) -> set[str]:
    return {t.lever for t in tried if t.outcome in JUDGED and covers(t, under)}


def updated(
    frontier: Frontier,
    tried: Sequence[TriedLever],
    levers: Sequence[Lever],
    now: datetime,
    under: TriedUnder | None = None,
) -> Frontier:
    """The frontier with `tried` recorded (a lever tried again by the same run replaces its entry) and the untried
    list re-ranked from `levers` (the run's next levers, predictions) and the old one, less every lever judged where
    the run (`under`) was."""
    keys = {(t.lever, t.run) for t in tried}
    kept = [t for t in frontier.tried if (t.lever, t.run) not in keys] + list(tried)
    judged = _judged(kept, under)
    by_name = {lever.lever: lever for lever in frontier.untried} | {lever.lever: lever for lever in levers}
    untried = sorted((v for k, v in by_name.items() if k not in judged), key=lambda v: (-v.score, v.lever))
    return frontier.model_copy(update={"tried": kept, "untried": untried, "updated_at": now})


def said_next(frontier: Frontier) -> str:
    """What the frontier says: its top untried lever and its gate, or, with none, which tried levers emptied it."""
    if frontier.untried:
        top = frontier.untried[0]
        return f"{frontier.model}: try {top.lever} ({top.change}; {top.gate})"
    refuted = [f"{t.lever} ({t.outcome}: {t.why})" for t in frontier.tried if t.outcome in JUDGED - {"improvement"}]
    won = [t.lever for t in frontier.tried if t.outcome == "improvement"]
    return (
        f"{frontier.model}: nothing left on the frontier: won {', '.join(won) or 'none'}; refuted "
        f"{'; '.join(refuted) or 'none'}; the speed-of-light figure of the last run says how far is left"
    )


def open_levers(levers: Sequence[Lever], frontier: Frontier | None, under: TriedUnder | None = None) -> list[Lever]:
    """The levers no VERDICT on this frontier judged where the run (`under`) is: one an A/B already refuted there is
    not proposed again; one refuted only eager, or at lower concurrency, is, under graphs or above it."""
    judged = set() if frontier is None else _judged(frontier.tried, under)
    return [lever for lever in levers if lever.lever not in judged]


def under_of(graphs: str, concurrencies: Sequence[int], tokens_per_request: int | None) -> TriedUnder:
    """Where a run measured: its regime, its top concurrency, its longest requests."""
    return TriedUnder(graphs=graphs, top_concurrency=max(concurrencies), tokens_per_request=tokens_per_request)


__all__ = ["FLAG_LEVERS", "KNOB_LEVERS", "covers", "levers_tried", "said_next", "open_levers", "under_of", "updated"]
