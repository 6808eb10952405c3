"""memory_predict: what a boot would print about its memory, before it runs, from the engine's calibrated model.

The model learns from every boot it can read: the corpora redline ships (src/redline/data/boots) and the rungs,
cells and trials recorded in the workspace, of the same engine release on the same GPU where there are such boots
(else every boot of the engine, and a warning says so). A recorded boot of the very same model is its anchor: its
measured terms are taken as they were. Every answer is labelled predicted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redline.engines import get_engine
from redline.errors import InputError
from redline.models.memory import Calibration, GpuSpec, MemoryPrediction, Observation
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.evidence.context import local_model_files
from redline.ops.predict.corpus import shipped
from redline.ops.predict.recorded import recorded_boots
from redline.ops.requests_predict import MemoryPredictRequest
from redline.policy.known_good import same_release


@dataclass(frozen=True)
class MemoryBasis:
    """What a prediction stands on beside its config: the engine's calibration, and the boots of the same model."""

    engine: str
    calibration: Calibration
    same_model: list[Observation]
    warnings: list[str] = field(default_factory=list)


def _matches(o: Observation, version: str | None, gpu: GpuSpec | None) -> bool:
    same_version = version is None or o.engine_version is None or same_release(o.engine_version, version)
    return same_version and (gpu is None or o.gpu is None or o.gpu.name == gpu.name)


def memory_basis(
    observations: list[Observation], engine: str, shape: ModelShape, *, version: str | None, gpu: GpuSpec | None
) -> MemoryBasis:
    """The calibration of `engine` on the boots of its release and GPU (else all of its boots, said so)."""
    model, warnings = get_engine(engine).memory_model(), []
    picked = [o for o in observations if o.engine == engine and _matches(o, version, gpu)]
    calibration = model.calibrate(picked)
    if calibration.boots == 0:
        picked = [o for o in observations if o.engine == engine]
        calibration = model.calibrate(picked)
        if calibration.boots:
            warnings.append(
                f"no recorded boot of {engine} {version or ''} on {gpu.name if gpu else 'this host'}: calibrated on "
                f"{calibration.engine_version} on {calibration.gpu_name}"
            )
    return MemoryBasis(engine, calibration, [o for o in picked if o.shape == shape], warnings)


def predict_with(
    basis: MemoryBasis,
    shape: ModelShape,
    serve: ServeConfig,
    gpu: GpuSpec | None,
    *,
    version: str | None,
    architecture: str | None = None,
) -> MemoryPrediction:
    """One config's prediction on a basis, anchored on the boot of this model nearest it, if any."""
    model = get_engine(basis.engine).memory_model()
    anchor = model.pick_anchor(basis.same_model, serve, gpu)
    found = model.predict(
        shape,
        serve,
        gpu,
        basis.calibration,
        model=serve.model,
        architecture=architecture,
        version=version,
        anchor=anchor,
    )
    return found.model_copy(update={"warnings": [*basis.warnings, *found.warnings]}) if basis.warnings else found


def _serve(r: MemoryPredictRequest) -> ServeConfig:
    flags = [f"--kv-cache-memory-bytes={r.kv_cache_memory_bytes}"] if r.kv_cache_memory_bytes else []
    return ServeConfig(
        model=r.model,
        max_model_len=r.max_model_len,
        max_num_batched_tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        gpu_memory_utilization=r.gpu_memory_utilization,
        kv_cache_dtype=r.kv_cache_dtype,
        enforce_eager=r.enforce_eager,
        tensor_parallel_size=r.tensor_parallel_size,
        extra_flags=flags,
    )


def _gpu(r: MemoryPredictRequest) -> GpuSpec | None:
    if (r.gpu_name is None) != (r.gpu_memory_gib is None):
        raise InputError("gpu_name and gpu_memory_gib: give both (the GPU as nvidia-smi shows it), or neither")
    return GpuSpec(name=r.gpu_name, memory_gib=r.gpu_memory_gib) if r.gpu_name and r.gpu_memory_gib else None


def memory_predict(workspace: Path | None, request: MemoryPredictRequest) -> MemoryPrediction:
    """The prediction for one config, calibrated on the shipped boots and the workspace's."""
    shape, why = local_model_files(str(Path(request.model).expanduser().absolute())).shape
    if shape is None:
        raise InputError(f"model: {why}; give the folder that holds the model's config.json")
    gpu = _gpu(request)
    observations = shipped(request.engine)
    recorded = recorded_boots(workspace, request.engine) if workspace is not None else None
    if recorded is not None:
        observations += recorded.observations
    basis = memory_basis(observations, request.engine, shape, version=request.engine_version, gpu=gpu)
    found = predict_with(
        basis, shape, _serve(request), gpu, version=request.engine_version, architecture=Path(request.model).name
    )
    if recorded is not None and recorded.left_out:
        said = f"{len(recorded.left_out)} recorded boots left out, such as {recorded.left_out[0]}"
        found = found.model_copy(update={"warnings": [*found.warnings, said]})
    return found


__all__ = ["MemoryBasis", "memory_basis", "memory_predict", "predict_with"]
