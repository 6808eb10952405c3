"""The one prediction entry: every tool that predicts a boot's memory (memory_predict and `redline predict`, a
ladder's joint plan, a campaign's and an A/B's plan) asks predict_config the same question, on the same boots, so
one config gets one number and one band everywhere; a boot's drift is judged against that answer.

The model learns from every boot it can read: the corpora redline ships (src/redline/data/boots) and the rungs,
cells and trials recorded in the workspace, of the same engine release on the same GPU where there are such boots
(else every boot of the engine, and a warning says so). A recorded boot of the very same model is its anchor: its
measured terms are taken as they were. Every answer is labelled predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from redline.engines import get_engine
from redline.errors import InputError
from redline.models.boot import CompileCache
from redline.models.memory import Calibration, GpuSpec, MemoryPrediction, Observation, gpu_spec
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.predict.corpus import shipped
from redline.ops.predict.model_config import request_shape
from redline.ops.predict.recorded import recorded_boots
from redline.ops.requests_predict import MemoryPredictRequest
from redline.policy.known_good import same_release
from redline.policy.recorded_setup import learned, setup_boots


@dataclass(frozen=True)
class Question:
    """One config to predict, as every caller puts it: the engine release and the GPU it boots on, the model's shape,
    the serve config (whose model names the model), and the torch.compile cache its boot finds (None: cold, as a
    fresh deployment boots)."""

    engine: str
    version: str | None
    gpu: GpuSpec | None
    shape: ModelShape
    serve: ServeConfig
    architecture: str | None = None
    compile_cache: CompileCache | None = None


@dataclass(frozen=True)
class Boots:
    """What an engine's model learns from: every boot it could read, and those it could not (with why)."""

    observations: list[Observation]
    left_out: list[str] = field(default_factory=list)


def calibration_boots(engine: str, workspace: Path | None, own: Sequence[Observation] = ()) -> Boots:
    """The shipped boots of `engine`, the workspace's recorded ones, and `own` (a ladder's rungs not yet on disk),
    each boot once."""
    found = list(shipped(engine))
    recorded = recorded_boots(workspace, engine) if workspace is not None else None
    if recorded is not None:
        found += recorded.observations
    seen = {o.source for o in found}
    found += [o for o in own if o.source not in seen]
    return Boots(found, recorded.left_out if recorded is not None else [])


def _same_release(o: Observation, version: str | None) -> bool:
    return version is None or o.engine_version is None or same_release(o.engine_version, version)


def _calibration(q: Question, boots: Boots) -> tuple[Calibration, list[Observation], list[str]]:
    """The engine's calibration on the boots of its release (else all of its boots, said so), the GPU's own terms
    on that GPU's boots where there are any, and the boots of the same model (the anchor's candidates)."""
    model, warnings = get_engine(q.engine).memory_model(), []
    picked = [o for o in boots.observations if o.engine == q.engine and _same_release(o, q.version)]
    calibration = model.calibrate(picked, gpu=q.gpu)
    if calibration.boots == 0:
        release = len(picked)
        picked = [o for o in boots.observations if o.engine == q.engine]
        calibration = model.calibrate(picked, gpu=q.gpu)
        if calibration.boots and q.gpu is not None:  # a KV cache sized in bytes (a host without a GPU) needs none
            version = f"{q.engine} {q.version or ''}".rstrip()
            said = f"{release} recorded boot(s) of {version}, none of which calibrates" if release else ""
            warnings.append(f"{said or f'no recorded boot of {version}'}: calibrated on {calibration.engine_version}")
    if q.gpu is not None and calibration.boots and calibration.gpu_name != q.gpu.name:
        warnings.append(f"no recorded boot on {q.gpu.name}: its terms are the other GPUs' (and nvidia-smi's)")
    if boots.left_out:
        warnings.append(f"{len(boots.left_out)} recorded boots left out, such as {boots.left_out[0]}")
    return calibration, [o for o in picked if o.shape == q.shape], warnings


def predict_config(q: Question, boots: Boots) -> MemoryPrediction:
    """The one answer for a config: the engine's model calibrated on the boots, anchored on the recorded boot of
    this model nearest the config, if any, and on the recorded boots of its very setup (policy/recorded_setup.py:
    their KV cache, the band covering every one)."""
    calibration, same_model, warnings = _calibration(q, boots)
    model = get_engine(q.engine).memory_model()
    found = model.predict(
        q.shape,
        q.serve,
        q.gpu,
        calibration,
        model=q.serve.model,
        architecture=q.architecture,
        version=q.version,
        anchor=model.pick_anchor(same_model, q.serve, q.gpu, q.compile_cache),
        compile_cache=q.compile_cache,
    )
    found = learned(found, setup_boots(found, q.shape, boots.observations), model.concurrency)
    return found.model_copy(update={"warnings": [*warnings, *found.warnings]}) if warnings else found


# The serve knobs memory_predict takes as fields of its own, each named as the serve config names it.
SERVE_KNOBS = tuple(sorted(ServeConfig.model_fields.keys() & MemoryPredictRequest.model_fields.keys()))


def _serve(r: MemoryPredictRequest) -> ServeConfig:
    flags = [f"--kv-cache-memory-bytes={r.kv_cache_memory_bytes}"] if r.kv_cache_memory_bytes else []
    return ServeConfig(**{knob: getattr(r, knob) for knob in SERVE_KNOBS}, extra_flags=flags)


def _gpu(r: MemoryPredictRequest) -> GpuSpec | None:
    if (r.gpu_name is None) != (r.gpu_memory_gib is None):
        raise InputError("gpu_name and gpu_memory_gib: give both (the GPU as nvidia-smi shows it), or neither")
    return gpu_spec(r.gpu_name, r.gpu_memory_gib, r.gpu_reserved_gib)


def memory_predict(
    workspace: Path | None, request: MemoryPredictRequest, config_text: str | None = None
) -> MemoryPrediction:
    """The prediction for one config (memory_predict, `redline predict`), on the shipped boots and the workspace's;
    `config_text`: the model's config.json as the request's model_config_file gave it (read by the caller)."""
    shape = request_shape(request.model, config_text)
    question = Question(
        request.engine,
        request.engine_version,
        _gpu(request),
        shape,
        _serve(request),
        Path(request.model).name,
        request.compile_cache,
    )
    return predict_config(question, calibration_boots(request.engine, workspace))


__all__ = ["Boots", "Question", "calibration_boots", "memory_predict", "predict_config"]
