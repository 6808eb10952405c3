"""The predict policy at the edge: the memory model's joint ceiling for a ladder whose floor just booted.

The boots it learns from are read here (the shipped corpora, the workspace's records, the ladder's own rungs, the
floor first among them: its anchor); the plan itself is policy/joint.py's, pure. The prediction is for the
torch.compile cache the ladder's deployment boots with (policy/compile_proof.py: cold unless it keeps its cache),
whatever cache the floor found. A ladder whose model's shape or
GPU is unknown, or whose engine cannot be predicted there, gets no plan and climbs by the signal policy.
"""

from __future__ import annotations

from pathlib import Path

from redline.errors import InputError
from redline.models.ladder import JointPlan, Ladder
from redline.ops.predict.predict import Boots, Question, calibration_boots, predict_config
from redline.ops.predict.recorded import ladder_boots, ladder_gpu
from redline.policy import compile_proof, joint
from redline.policy.rungs import is_good


def wants_plan(ladder: Ladder) -> bool:
    return ladder.policy == "predict" and ladder.joint is None and ladder.model.shape is not None


def ladder_source(path: Path, workspace: Path | None) -> str:
    """How a ladder's rungs are named as calibration boots (as the workspace's records name them)."""
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix() if workspace is not None else path.name
    except ValueError:  # a ladder outside the workspace: its own name
        return path.name


def memory_observations(workspace: Path | None, ladder: Ladder) -> Boots:
    """Every boot the ladder's engine is calibrated on: shipped, and the workspace's where it is in one."""
    return calibration_boots(ladder.engine, workspace)


def plan_joint(ladder: Ladder, boots: Boots, source: str) -> JointPlan | None:
    """The joint ceiling for a predict ladder whose floor booted good; None otherwise, or where nothing predicts."""
    if not wants_plan(ladder) or not ladder.rungs or not is_good(ladder.rungs[0], ladder.min_concurrency):
        return None
    shape, gpu = ladder.model.shape, ladder_gpu(ladder)
    assert shape is not None  # wants_plan
    serve = ladder.rungs[0].serve.model_copy(update={"max_num_batched_tokens": joint.target_batched_tokens(ladder)})
    own = ladder_boots(ladder, source)  # its rungs as they are now (the floor just booted: not on disk yet)
    mine = {o.source for o in own}
    everything = Boots([*(o for o in boots.observations if o.source not in mine), *own], boots.left_out)
    try:
        state = compile_proof.deployment(ladder)
        asked = Question(ladder.engine, ladder.engine_version, gpu, shape, serve, compile_cache=state)
        prediction = predict_config(asked, everything)
    except InputError:
        return None
    return joint.plan(ladder, prediction)


__all__ = ["ladder_source", "memory_observations", "plan_joint", "wants_plan"]
