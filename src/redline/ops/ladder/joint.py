"""The predict policy at the edge: the memory model's joint ceiling for a ladder whose floor just booted.

The boots it learns from are read here (the shipped corpora, the workspace's records, the ladder's own rungs, the
floor first among them: its anchor); the plan itself is policy/joint.py's, pure. A ladder whose model's shape or
GPU is unknown, or whose engine cannot be predicted there, gets no plan and climbs by the signal policy.
"""

from __future__ import annotations

from pathlib import Path

from redline.errors import InputError
from redline.models.ladder import JointPlan, Ladder
from redline.models.memory import GpuSpec, Observation
from redline.ops.predict.corpus import shipped
from redline.ops.predict.predict import memory_basis, predict_with
from redline.ops.predict.recorded import recorded_boots
from redline.policy import joint
from redline.policy.rungs import is_good


def ladder_gpu(ladder: Ladder) -> GpuSpec | None:
    g = ladder.gpu
    return GpuSpec(name=g.name, memory_gib=g.memory_gib) if g and g.name and g.memory_gib else None


def own_boots(ladder: Ladder, source: str) -> list[Observation]:
    """The ladder's booted rungs, as the memory model reads a recorded boot."""
    if ladder.model.shape is None:
        return []
    return [
        Observation(
            source=f"{source} rung {r.index}",
            architecture=ladder.model.key,
            shape=ladder.model.shape,
            serve=r.serve,
            engine=ladder.engine,
            engine_version=r.signals.engine_version or ladder.engine_version,
            gpu=ladder_gpu(ladder),
            signals=r.signals,
        )
        for r in ladder.rungs
        if r.status.booted
    ]


def wants_plan(ladder: Ladder) -> bool:
    return ladder.policy == "predict" and ladder.joint is None and ladder.model.shape is not None


def memory_observations(path: Path, ladder: Ladder) -> list[Observation]:
    """Every boot the ladder's engine is calibrated on: shipped, and the workspace's if the ladder is in one."""
    found = shipped(ladder.engine)
    if path.parent.name == "ladders":
        found += recorded_boots(path.parent.parent, ladder.engine).observations
    return found


def plan_joint(ladder: Ladder, observations: list[Observation], source: str) -> JointPlan | None:
    """The joint ceiling for a predict ladder whose floor booted good; None otherwise, or where nothing predicts."""
    if not wants_plan(ladder) or not ladder.rungs or not is_good(ladder.rungs[0], ladder.min_concurrency):
        return None
    shape, gpu = ladder.model.shape, ladder_gpu(ladder)
    assert shape is not None  # wants_plan
    serve = ladder.rungs[0].serve.model_copy(update={"max_num_batched_tokens": joint.target_batched_tokens(ladder)})
    everything = [*observations, *own_boots(ladder, source)]
    basis = memory_basis(everything, ladder.engine, shape, version=ladder.engine_version, gpu=gpu)
    try:
        prediction = predict_with(basis, shape, serve, gpu, version=ladder.engine_version)
    except InputError:
        return None
    return joint.plan(ladder, prediction)


__all__ = ["ladder_gpu", "memory_observations", "own_boots", "plan_joint", "wants_plan"]
