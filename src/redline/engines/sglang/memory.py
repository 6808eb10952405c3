"""SGLang's KV pool at boot, predicted: a share of the device, less the weights.

SGLang measures the free memory before it loads the weights, and gives the KV pool what `--mem-fraction-static`
of that leaves once the weights are in (activations live in the share it keeps back, so no profile run sets the
pool):

    pool GiB = mem_fraction_static x free at start - weights
    pool tokens = pool bytes // bytes per token            (a page of one token: no block rounding)

Its log prints the free memory (`Load weight begin. avail mem=...`, times the fraction in `requested`), the
weights (`mem usage=...`) and the pool (`K size ... V size ...`), so each term is fitted on recorded boots: the
free memory as nvidia-smi's total less a fitted reserve, the weights as the parameters and the rotary table
(SGLang keeps it in float32) plus a fitted offset, and the identity's own offset. The context length and the
prefill chunk do not move the pool, which is why SGLang boots a context its pool cannot hold (a prediction says
so: only a smoke test confirms such a context).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from redline.engines.memory_fit import Asked, Sized, offset, prediction
from redline.errors import InputError
from redline.models.boot import CompileCache
from redline.models.memory import GIB, Calibration, GpuSpec, MemoryPrediction, Observation, Terms
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape, kv_bytes_per_token, weight_bytes

PRIOR_RESERVE = -1.3  # GiB of nvidia-smi's total SGLang does not find free at start (an H200: 140.4 -> 139.13)
PRIOR_POOL = -0.03


def _measured(o: Observation) -> bool:
    m, s = o.signals.memory, o.signals
    return o.gpu is not None and None not in (m.weights_gib, m.requested_gib, s.available_kv_cache_gib)


def weights_formula_gib(shape: ModelShape, serve: ServeConfig) -> float:
    total = weight_bytes(shape)
    assert total is not None  # no quantization: SGLang's is named in its own flags, which redline does not size
    rope = (shape.max_positions or 0) * (shape.rotary_dim or 0) * 4
    return (total / serve.tensor_parallel_size + rope) / GIB


def kv_per_token(shape: ModelShape, serve: ServeConfig) -> int:
    total = kv_bytes_per_token(shape, serve.kv_cache_dtype)
    if total is None:
        raise InputError(f"kv_cache_dtype: {serve.kv_cache_dtype!r} is not one redline sizes (auto, fp8_e4m3, ...)")
    return total // shape.kv_heads * max(1, shape.kv_heads // serve.tensor_parallel_size)


def _free_at_start(o: Observation) -> float:
    return (o.signals.memory.requested_gib or 0.0) / o.serve.gpu_memory_utilization


def _pool_residual(o: Observation) -> float:
    requested, weights = o.signals.memory.requested_gib or 0.0, o.signals.memory.weights_gib or 0.0
    return (o.signals.available_kv_cache_gib or 0.0) - (requested - weights)


def calibrate(
    observations: Sequence[Observation], left_out: Sequence[str] = (), gpu: GpuSpec | None = None
) -> Calibration:
    """Every term fitted on the boots; the reserve on those of `gpu` where there are any."""
    boots = [o for o in observations if _measured(o) and o.architecture not in left_out]
    here = [o for o in boots if gpu is not None and o.gpu is not None and o.gpu.name == gpu.name] or boots
    weights = [(o.signals.memory.weights_gib or 0.0) - weights_formula_gib(o.shape, o.serve) for o in boots]
    reserve = [_free_at_start(o) - o.gpu.memory_gib for o in here if o.gpu is not None]
    terms = {
        "weights_gib": offset("weights_gib", weights, 0.0, "the parameters and a float32 rope table, nothing more"),
        "reserve_gib": offset("reserve_gib", reserve, PRIOR_RESERVE, "an H200's 1.3 GiB"),
        "kv_gib": offset("kv_gib", [_pool_residual(o) for o in boots], PRIOR_POOL, "0.03 GiB"),
    }
    first = boots[0] if boots else None
    return Calibration(
        engine="sglang",
        engine_version=first.engine_version if first else None,
        gpu_name=first.gpu.name if first and first.gpu else None,
        terms=terms,
        boots=len(boots),
        architectures=sorted({o.architecture for o in boots}),
        sources=sorted({o.source for o in boots}),
        left_out=sorted(left_out),
    )


def same_setup(o: Observation, serve: ServeConfig, gpu: GpuSpec | None) -> bool:
    if not _measured(o) or o.gpu is None or gpu is None or o.gpu.name != gpu.name:
        return False
    same_kv = (o.serve.kv_cache_dtype or "auto") == (serve.kv_cache_dtype or "auto")
    return same_kv and o.serve.tensor_parallel_size == serve.tensor_parallel_size


def pick_anchor(
    candidates: Sequence[Observation],
    serve: ServeConfig,
    gpu: GpuSpec | None,
    compile_cache: CompileCache | None = None,
) -> Observation | None:
    """The boot of this model nearest this config's memory share (the pool moves with it alone; the torch.compile
    cache, not at all)."""
    same = [o for o in candidates if same_setup(o, serve, gpu)]
    share = serve.gpu_memory_utilization
    return min(same, key=lambda o: abs(o.serve.gpu_memory_utilization - share)) if same else None


def _terms(
    shape: ModelShape, serve: ServeConfig, gpu: GpuSpec, cal: Calibration, anchor: Observation | None
) -> tuple[Terms, float, str]:
    share, t = serve.gpu_memory_utilization, cal.terms
    if anchor is not None:
        free, weights = _free_at_start(anchor), anchor.signals.memory.weights_gib or 0.0
        pool_offset, band, basis = (
            _pool_residual(anchor),
            0.02,
            f"the anchor's free memory and weights ({anchor.source})",
        )
    else:
        free = gpu.memory_gib + t["reserve_gib"].coefficients["reserve_gib"]
        weights = weights_formula_gib(shape, serve) + t["weights_gib"].coefficients["weights_gib"]
        pool_offset = t["kv_gib"].coefficients["kv_gib"]
        band = sum(t[k].band_gib for k in ("weights_gib", "reserve_gib", "kv_gib"))
        basis = f"weights: formula + {t['weights_gib'].basis}; free at start: {t['reserve_gib'].basis}"
    pool = share * free - weights + pool_offset
    return (
        Terms(device_total_gib=free, budget_gib=share * free, weights_gib=weights, available_kv_cache_gib=pool),
        band,
        basis,
    )


def predict(
    shape: ModelShape,
    serve: ServeConfig,
    gpu: GpuSpec | None,
    cal: Calibration,
    *,
    model: str,
    architecture: str | None,
    version: str | None,
    anchor: Observation | None = None,
    compile_cache: CompileCache | None = None,
) -> MemoryPrediction:
    """SGLang's pool from its memory fraction; `compile_cache` changes nothing (SGLang sizes its pool before it
    compiles anything), and the prediction names none."""
    del compile_cache
    if gpu is None:
        raise InputError("gpu: SGLang sizes its pool from a GPU's memory: name the GPU (--gpu-name, --gpu-memory-gib)")
    per_token = kv_per_token(shape, serve)
    terms, band, basis = _terms(shape, serve, gpu, cal, anchor)

    def tokens(gib: float) -> int:
        return max(0, math.floor(gib * GIB / per_token))

    pool = terms.available_kv_cache_gib
    sized = Sized(terms, band, basis, per_token, (tokens(pool), tokens(pool - band), tokens(pool + band)))
    count, mml = sized.tokens[0], serve.max_model_len
    short = (
        f"the pool ({count:,} tokens) is smaller than max_model_len {mml:,}: SGLang boots anyway, and only a smoke "
        "test shows whether such a context is served"
    )
    ask = Asked(serve, gpu, cal, model, architecture, version, anchor)
    return prediction(
        "sglang",
        ask,
        sized,
        concurrency=concurrency(count, mml, gpu),
        boots=True,
        warnings=[] if count >= mml else [short],
    )


def concurrency(kv_cache_tokens: int, max_model_len: int, gpu: GpuSpec | None) -> float:
    """Requests of max_model_len SGLang's pool holds (its tokens over the length: it pages token by token)."""
    del gpu
    return round(kv_cache_tokens / max_model_len, 2)


__all__ = ["calibrate", "concurrency", "pick_anchor", "predict", "same_setup"]
