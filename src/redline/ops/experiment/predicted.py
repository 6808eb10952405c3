"""The prepare pipeline's memory stage: each config an experiment plans (a campaign's cell, an A/B's arm) predicted
before any boot, its KV cache on the target's GPU by the one prediction entry (ops/predict/predict.py), and whether
its workload (the most tokens its benches hold at once: each workload's top concurrency's requests at their whole
length, the largest) fits in it. A config predicted infeasible is said so in the plan, with its numbers; it is still
run if the person runs it, and its boot, like every recorded boot, calibrates the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from redline.errors import InputError
from redline.models.memory import MemoryPrediction, gpu_spec
from redline.models.planned import CellPrediction, PlannedConfig
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.evidence.known_good_apply import Identity
from redline.ops.predict.predict import Boots, Question, calibration_boots, predict_config

P = TypeVar("P", bound=PlannedConfig)


Feasible = Literal["yes", "at risk", "no"]


def judged(low: int, high: int, needed: int, one_request: int | None = None) -> tuple[Feasible, str]:
    """A workload's need against a predicted cache (the tokens a request may use at the band's ends): no, at risk
    (only the band's high end holds it), yes, and why; `one_request`: the max_model_len one request must fit, where
    no boot calibrated the prediction."""
    if one_request is not None and high < one_request:
        return "no", f"one request of max_model_len {one_request:,} needs more than the {high:,} tokens at most"
    if high < needed:
        return "no", f"the workload needs {needed:,} KV tokens at once, the cache holds {high:,} at most"
    if low < needed:
        return "at risk", f"the workload needs {needed:,} KV tokens at once: only the band's high end holds it"
    return "yes", f"the workload's {needed:,} KV tokens fit in the band's low end ({low:,})"


def feasibility(prediction: MemoryPrediction, needed: int) -> CellPrediction:
    """A config's workload against its predicted cache (less the tokens the engine keeps back). The prediction's own
    figures are kept unchanged."""
    p = prediction
    low, high = p.kv_cache_tokens_low - p.reserved_tokens, p.kv_cache_tokens_high - p.reserved_tokens
    feasible, why = judged(low, high, needed, None if p.boots else p.serve.max_model_len)
    return CellPrediction.of(p, needed_tokens=needed, feasible=feasible, why=f"predicted: {why} ({p.basis})")


def for_need(prediction: CellPrediction, needed: int) -> CellPrediction:
    """A recorded prediction judged again against the need as a plan counts it now (its KV figures unchanged): a
    verdict written while a campaign of several workloads was judged by its longest request at its highest
    concurrency is judged by each workload's own load."""
    if prediction.needed_tokens == needed:
        return prediction
    p = prediction
    feasible, why = judged(
        p.kv_cache_tokens_low - p.reserved_tokens, p.kv_cache_tokens_high - p.reserved_tokens, needed
    )
    return p.model_copy(update={"needed_tokens": needed, "feasible": feasible, "why": f"predicted: {why} ({p.basis})"})


def predicted_for(
    engine: str, serve: ServeConfig, shape: ModelShape | None, identity: Identity, boots: Boots, needed: int
) -> CellPrediction | None:
    """A config's KV cache on the target's GPU against the workload (a campaign's cell, an A/B's arm); None where
    nothing predicts (no model shape, or no GPU and no KV size given)."""
    host = identity.host
    first = host.gpus[0] if host and host.gpus else None
    kept = first.reserved_mib / 1024 if first and first.reserved_mib is not None else None
    gpu = gpu_spec(first.name, first.memory_mib / 1024, kept) if first else None
    if shape is None:
        return None
    try:
        return feasibility(predict_config(Question(engine, identity.engine_version, gpu, shape, serve), boots), needed)
    except InputError:
        return None


def engine_observations(engine: str, workspace: Path) -> Boots:
    """What the memory model calibrates on for an engine: the boots redline ships and those the workspace recorded."""
    return calibration_boots(engine, workspace)


def predicted(
    configs: Sequence[P],
    shape: Callable[[str], ModelShape | None],
    identities: dict[str, Identity],
    workspace: Path,
    needed: int,
) -> list[P]:
    """Each config with its prediction (`shape`: each model's, as read on the target), the workspace's recorded boots
    of each engine read once."""
    seen = {e: engine_observations(e, workspace) for e in dict.fromkeys(c.engine for c in configs)}
    return [
        c.model_copy(
            update={
                "predicted": predicted_for(
                    c.engine, c.serve, shape(c.serve.model), identities[c.engine], seen[c.engine], needed
                )
            }
        )
        for c in configs
    ]


def infeasible_gates(planned: Sequence[PlannedConfig]) -> list[str]:
    """The plan's gate naming each config the memory model predicts infeasible; it still runs if asked to."""
    infeasible = [f"{c.name} ({c.predicted.why})" for c in planned if c.predicted and c.predicted.feasible == "no"]
    return [f"predicted infeasible, run only if you mean to: {'; '.join(infeasible)}"] if infeasible else []


__all__ = [
    "engine_observations",
    "feasibility",
    "for_need",
    "infeasible_gates",
    "judged",
    "predicted",
    "predicted_for",
]
