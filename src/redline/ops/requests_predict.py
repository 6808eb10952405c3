"""The request of the memory model's operation: a model, a serve config's memory knobs, a GPU."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from redline.engines import DEFAULT_ENGINE, EngineName, engine_names
from redline.models.bench import Count
from redline.ops.request_base import ModelConfigFile, Request


class MemoryPredictRequest(Request):
    """What a boot would print about its memory, predicted before it runs: the model's folder, the knobs, the GPU."""

    model: Annotated[
        str, Field(min_length=1, max_length=4096, description="The model's folder on this machine (its config.json)")
    ]
    model_config_file: ModelConfigFile = None
    engine: Annotated[EngineName, Field(description=f"The engine, one of: {', '.join(engine_names())}")] = (
        DEFAULT_ENGINE
    )
    engine_version: Annotated[
        str | None, Field(max_length=64, description="The engine version the boot would run (the calibration's)")
    ] = None
    gpu_name: Annotated[
        str | None, Field(max_length=200, description="The GPU as nvidia-smi names it, such as NVIDIA H200")
    ] = None
    gpu_memory_gib: Annotated[
        float | None, Field(gt=0, le=100_000, description="The GPU's memory in GiB: nvidia-smi's memory.total / 1024")
    ] = None
    gpu_reserved_gib: Annotated[
        float | None,
        Field(
            ge=0,
            le=100_000,
            description="What the driver keeps of it: nvidia-smi's memory.reserved / 1024 (used for a GPU no "
            "recorded boot ran on)",
        ),
    ] = None
    max_model_len: Annotated[Count, Field(description="The boot's max_model_len")]
    max_num_batched_tokens: Annotated[Count | None, Field(description="The boot's max_num_batched_tokens")] = None
    max_num_seqs: Annotated[int | None, Field(gt=0, le=1 << 20, description="The boot's max_num_seqs")] = None
    gpu_memory_utilization: Annotated[
        float, Field(gt=0, le=1, description="The share of the GPU's memory the engine may use, as a ladder's")
    ] = 0.9
    kv_cache_dtype: Annotated[
        str | None, Field(pattern=r"^[a-z0-9_]+$", max_length=32, description="auto, fp8, ... (default: auto)")
    ] = None
    enforce_eager: Annotated[bool, Field(description="Eager: no captured graphs")] = False
    compile_cache: Annotated[
        Literal["cold", "warm"],
        Field(
            description="The torch.compile cache the boot finds: cold (a fresh deployment's: it compiles, and the "
            "engine's profile counts what compiling held), or warm (an earlier boot of this config left it); an eager "
            "config compiles nothing"
        ),
    ] = "cold"
    tensor_parallel_size: Annotated[int, Field(ge=1, le=1024, description="GPUs the model is split over")] = 1
    kv_cache_memory_bytes: Annotated[
        int | None,
        Field(gt=0, le=1 << 50, description="A KV cache the config sizes in bytes (a host without a GPU needs one)"),
    ] = None


PREDICT_OPERATIONS: dict[str, type[Request]] = {"memory_predict": MemoryPredictRequest}

__all__ = ["PREDICT_OPERATIONS", "MemoryPredictRequest"]
