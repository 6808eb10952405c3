"""The prepare pipeline's memory stage: each config an experiment plans (a campaign's cell, an A/B's arm) predicted
before any boot, its KV cache on the target's GPU by the one prediction entry (ops/predict/predict.py), and whether
its workload (the top concurrency's requests at their whole length) fits in it. A config predicted infeasible is
said so in the plan, with its numbers; it is still run if the person runs it, and its boot, like every recorded
boot, calibrates the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from redline.errors import InputError
from redline.models.memory import MemoryPrediction, gpu_spec
from redline.models.planned import CellPrediction, PlannedConfig
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.evidence.known_good_apply import Identity
from redline.ops.predict.predict import Boots, Question, calibration_boots, predict_config

P = TypeVar("P", bound=PlannedConfig)


def feasibility(prediction: MemoryPrediction, needed: int) -> CellPrediction:
    """The workload against its predicted cache (less the tokens the engine keeps back): no, at risk (only the band's
    high end holds it), yes. The prediction's own figures are kept unchanged."""
    p, mml = prediction, prediction.serve.max_model_len
    low, high = p.kv_cache_tokens_low - p.reserved_tokens, p.kv_cache_tokens_high - p.reserved_tokens
    if not p.boots and high < mml:
        feasible, why = "no", f"one request of max_model_len {mml:,} needs more than the {high:,} tokens at most"
    elif high < needed:
        feasible, why = "no", f"the workload needs {needed:,} KV tokens at once, the cache holds {high:,} at most"
    elif low < needed:
        feasible, why = "at risk", f"the workload needs {needed:,} KV tokens at once: only the band's high end holds it"
    else:
        feasible, why = "yes", f"the workload's {needed:,} KV tokens fit in the band's low end ({low:,})"
    return CellPrediction.of(p, needed_tokens=needed, feasible=feasible, why=f"predicted: {why} ({p.basis})")


def predicted_for(
    engine: str, serve: ServeConfig, shape: ModelShape | None, identity: Identity, boots: Boots, needed: int
) -> CellPrediction | None:
    """A config's KV cache on the target's GPU against the workload; None where nothing predicts (no model shape, or
    no GPU and no KV size given)."""
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


__all__ = ["engine_observations", "feasibility", "infeasible_gates", "predicted", "predicted_for"]
