"""vLLM's memory terms fitted on recorded boots (memory_terms.py says what each is). A term of the model or the
engine (the weights' offset, the activation lines, the identity's residual) is fitted on every boot of the release;
a term of the GPU (its reserve, non-torch memory, CUDA graphs) on the boots of the GPU asked about where there are
any, else on every boot, and the reserve of a GPU no boot ran on is what nvidia-smi says it keeps
(memory.reserved) where that is known, else the other GPUs' share of their totals.
"""

from __future__ import annotations

from collections.abc import Sequence

from redline.engines.memory_fit import ROUNDING_GIB, at, grouped_line, line, offset
from redline.engines.vllm.memory_terms import (
    KEYS,
    activation_key,
    activation_x,
    capture,
    forward_bound,
    graph_mode,
    identity_residual,
    measured,
    weights_formula_gib,
)
from redline.engines.vllm.runner import graphs_in_budget, v1_sampler_gib
from redline.models.memory import Calibration, Fit, GpuSpec, Observation

# Priors, for a term no boot of the calibration shows (said in the prediction's basis).
PRIOR_ACTIVATION = (1.05, 0.25)  # x the MLP-peak bytes per batched token, + GiB
PRIOR_GRAPHS = (0.0019, 0.0)  # GiB per captured batch size
PRIOR_NON_TORCH = 0.22
PRIOR_RESERVE = -0.6  # GiB the driver keeps of nvidia-smi's total (an H200: 140.4 -> 139.8)
# Where no MoE boot calibrates, the dense line's band widens by this (an MoE layer's own kernels' workspace).
MOE_ALLOWANCE = 2.5


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
    """A line per class and mode, placed by the boots whose forward pass set the peak (less the V1 runner's
    sampling); an MoE line has an intercept per architecture (MoE architectures' profile peaks differ by a part no
    config term explains) and one slope, the batched tokens' cost, shared."""

    def points(key: str) -> dict[str, list[tuple[float, float]]]:
        found: dict[str, list[tuple[float, float]]] = {}
        for o in (o for o in boots if activation_key(o.shape, o.serve) == key and forward_bound(o.shape, o.serve)):
            seen = (o.signals.memory.peak_activation_gib or 0.0) - v1_sampler_gib(o.shape, o.serve)
            point = (activation_x(o.shape, o.serve), seen)
            found.setdefault(o.shape.model_dump_json() if "moe" in key else "", []).append(point)
        return found

    why = "the MLP's peak bytes per batched token, and 0.25 GiB"
    fits = {key: grouped_line(points(key), PRIOR_ACTIVATION, why) for key in KEYS}
    return {key: fit if fit.boots else _borrowed(key, fits) for key, fit in fits.items()}


def _reserve(boots: Sequence[Observation], gpu: GpuSpec | None) -> Fit:
    """What the driver keeps of nvidia-smi's total: measured on this GPU's boots; else nvidia-smi's memory.reserved;
    else the other GPUs' share of their totals; else the prior."""
    seen = [o for o in boots if o.gpu is not None and o.signals.memory.device_total_gib]
    own = [o for o in seen if gpu is not None and o.gpu is not None and o.gpu.name == gpu.name]
    if own or gpu is None or not seen and gpu.reserved_gib is None:
        kept = [(o.signals.memory.device_total_gib or 0) - (o.gpu.memory_gib if o.gpu else 0) for o in own or seen]
        return offset("reserve_gib", kept, PRIOR_RESERVE, "an H200's 0.6 GiB")
    if gpu.reserved_gib is not None:
        said = -gpu.reserved_gib
        return Fit(coefficients={"reserve_gib": said}, band_gib=ROUNDING_GIB, boots=0, basis="nvidia-smi's reserved")
    shares = [((o.signals.memory.device_total_gib or 0) - o.gpu.memory_gib) / o.gpu.memory_gib for o in seen if o.gpu]
    fit = offset("reserve_gib", [s * gpu.memory_gib for s in shares], PRIOR_RESERVE, "")
    fit.band_gib += abs(fit.coefficients["reserve_gib"]) / 2
    fit.basis = f"no boot on {gpu.name}: the share of their totals {len(shares)} boots' GPUs kept"
    return fit


def _graph_terms(boots: Sequence[Observation]) -> dict[str, Fit]:
    """The captured graphs' line in the largest batch, and how far vLLM's own estimate (the V1 runner's, taken from
    the budget) lies from it."""
    graphs = [
        (float(capture(o.serve)), o.signals.memory.cudagraph_gib or 0.0)
        for o in boots
        if graph_mode(o.serve) == "graphs"
    ]
    fit = line(graphs, PRIOR_GRAPHS, "0.0019 GiB per captured batch size")
    estimated = [
        (o.signals.memory.cudagraph_estimate_gib or 0.0) - at(fit, float(capture(o.serve)))
        for o in boots
        if graphs_in_budget(o.shape, o.serve) and o.signals.memory.cudagraph_estimate_gib is not None
    ]
    why = "vLLM's estimate is the captured graphs' size"
    return {"cuda_graph_gib": fit, "cuda_graph_estimate_gib": offset("cuda_graph_estimate_gib", estimated, 0.0, why)}


def calibrate(
    observations: Sequence[Observation], left_out: Sequence[str] = (), gpu: GpuSpec | None = None
) -> Calibration:
    """Every term fitted on the boots whose logs print the memory breakdown (GPU boots); `gpu`: the GPU a prediction
    is for, whose own boots (where there are any) fit the GPU's terms."""
    boots = [o for o in observations if measured(o) and o.architecture not in left_out]
    here = [o for o in boots if gpu is not None and o.gpu is not None and o.gpu.name == gpu.name] or boots
    weights = [(o.signals.memory.weights_gib or 0) - weights_formula_gib(o.shape, o.serve) for o in boots]
    usable = [o for o in boots if o.signals.memory.device_total_gib and o.signals.available_kv_cache_gib is not None]
    non_torch = [o.signals.memory.non_torch_gib or 0 for o in here]
    terms = {
        "weights_gib": offset("weights_gib", weights, 0.0, "the parameters and the rope table, nothing more"),
        **_activation_fits(boots),
        "non_torch_gib": offset("non_torch_gib", non_torch, PRIOR_NON_TORCH, "0.22 GiB"),
        **_graph_terms(here),
        "reserve_gib": _reserve(boots, gpu),
        "kv_gib": offset("kv_gib", [identity_residual(o) for o in usable], 0.0, "the budget identity holds exactly"),
    }
    named = gpu.name if gpu is not None else next((o.gpu.name for o in boots if o.gpu), None)
    return Calibration(
        engine="vllm",
        engine_version=boots[0].engine_version if boots else None,
        gpu_name=named if any(o.gpu and o.gpu.name == named for o in boots) else None,
        terms=terms,
        boots=len(boots),
        architectures=sorted({o.architecture for o in boots}),
        shapes=list({o.shape.model_dump_json(): o.shape for o in boots}.values()),
        sources=sorted({o.source for o in boots}),
        left_out=sorted(left_out),
    )


__all__ = ["calibrate"]
