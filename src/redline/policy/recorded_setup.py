"""A prediction learns from the boots of its very setup (pure): where the workspace recorded boots of the same model,
engine release, device (its GPU, or a host without one) and serve config (its address and max_model_len aside, the
KV cache does not depend on them; a cache sized in bytes, its bytes, KV dtype and parallelism alone), in the compile
state asked for, their KV cache anchors the answer and its band
covers every one of them. A memory model that missed (the CPU build's 26 boots at 3,968 KV tokens against a
zero-width band "4,096 (4,096 to 4,096)") is not repeated: its next answer is what the setup booted.

    answer = learned(prediction, setup_boots(prediction, shape, boots), concurrency)
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from redline.models.memory import GpuSpec, MemoryPrediction, Observation
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.policy.known_good import same_release

ASIDE = {"host", "port", "max_model_len"}  # what a boot's KV cache does not depend on
Concurrency = Callable[[int, int, GpuSpec | None], float]  # the engine's: tokens, max_model_len, GPU -> requests


def in_bytes(serve: ServeConfig, gpu: GpuSpec | None) -> bool:
    """Whether the KV cache is sized in bytes (a host without a GPU, or --kv-cache-memory-bytes): its tokens then
    depend on those bytes, the KV dtype and the parallelism alone."""
    return gpu is None or any("kv-cache-memory-bytes" in f for f in serve.extra_flags)


def _config(serve: ServeConfig, gpu: GpuSpec | None) -> dict[str, object]:
    """What of a config its KV cache depends on: all of it but its address and max_model_len; a cache sized in
    bytes, those bytes (its flags and env), the KV dtype and the parallelism."""
    if not in_bytes(serve, gpu):
        return serve.model_dump(exclude=ASIDE)
    keep = ("kv_cache_dtype", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "env")
    sized = [f for f in serve.extra_flags if "kv-cache-memory-bytes" in f]
    return {**serve.model_dump(include=set(keep) & set(ServeConfig.model_fields)), "bytes": sized}


def _device(gpu: GpuSpec | None) -> str | None:
    return gpu.name if gpu is not None else None


def setup_boots(p: MemoryPrediction, shape: ModelShape, boots: Sequence[Observation]) -> list[Observation]:
    """The recorded boots of the prediction's setup, each with a KV cache it printed."""
    state = p.compile_cache if p.compile_cache in ("cold", "warm") else None
    return [
        o
        for o in boots
        if o.engine == p.engine
        and o.shape == shape
        and (
            p.engine_version is None
            or (o.engine_version is not None and same_release(o.engine_version, p.engine_version))
        )
        and _device(o.gpu) == _device(p.gpu)
        and _config(o.serve, o.gpu) == _config(p.serve, p.gpu)
        and (state is None or o.signals.compile_cache == state)
        and o.signals.status.booted
        and o.signals.kv_cache_tokens
    ]


def learned(p: MemoryPrediction, setup: Sequence[Observation], concurrency: Concurrency) -> MemoryPrediction:
    """The prediction anchored on its setup's recorded boots: their median KV cache, the model's band around it,
    widened to cover every one of them; unchanged where there are none."""
    seen = [int(o.signals.kv_cache_tokens or 0) for o in setup]
    if not seen:
        return p
    center = int(statistics.median_low(seen))
    low = min(min(seen), center - (p.kv_cache_tokens - p.kv_cache_tokens_low))
    high = max(max(seen), center + (p.kv_cache_tokens_high - p.kv_cache_tokens))
    said = (
        f"anchored on {len(seen)} recorded boot(s) of this setup (model, engine release, device, config), which "
        f"booted {min(seen):,} to {max(seen):,} KV tokens; the model alone said {p.kv_cache_tokens:,} "
        f"({p.kv_cache_tokens_low:,} to {p.kv_cache_tokens_high:,})"
    )
    mml = p.serve.max_model_len
    return p.model_copy(
        update={
            "kv_cache_tokens": center,
            "kv_cache_tokens_low": max(0, low),
            "kv_cache_tokens_high": high,
            "max_concurrency": concurrency(center, mml, p.gpu),
            "boots": center - p.reserved_tokens >= mml,
            "basis": f"{p.basis}; {said}",
            "anchored_on": setup[-1].source,
        }
    )


__all__ = ["ASIDE", "Concurrency", "in_bytes", "learned", "setup_boots"]
