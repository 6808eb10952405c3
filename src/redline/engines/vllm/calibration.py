"""vLLM's memory terms fitted on recorded boots (memory_terms.py says what each is). A term of the model or the
engine (the weights' offset, the activation lines, the identity's residual) is fitted on every boot of the release;
a term of the GPU (its reserve, non-torch memory, CUDA graphs) on the boots of the GPU asked about where there are
any, else on every boot, and the reserve of a GPU no boot ran on is what nvidia-smi says it keeps
(memory.reserved) where that is known, else the other GPUs' share of their totals. The activation lines are per
compile state (memory_terms.py): a graph-mode boot whose record does not say its state places none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from redline.engines.memory_fit import ROUNDING_GIB, at, grouped_line, line, offset, sized
from redline.engines.vllm.memory_terms import (
    KEYS,
    SPIKE,
    activation_key,
    activation_x,
    capture,
    embedding_gib,
    forward_bound,
    graph_mode,
    hidden_batch_gib,
    identity_residual,
    measured,
    observed_state,
    spike_gib,
    weights_formula_gib,
)
from redline.engines.vllm.runner import V1_SAMPLER_BYTES, graphs_in_budget, v1_logits, v1_sampler_gib
from redline.models.memory import GIB, Calibration, Fit, GpuSpec, Observation
from redline.models.shape import ModelShape

# Priors, for a term no boot of the calibration shows (said in the prediction's basis).
PRIOR_ACTIVATION = (1.05, 0.25)  # x the MLP-peak bytes per batched token, + GiB
PRIOR_GRAPHS = (0.0019, 0.0)  # GiB per captured batch size
PRIOR_NON_TORCH = 0.22
PRIOR_RESERVE = -0.6  # GiB the driver keeps of nvidia-smi's total (an H200: 140.4 -> 139.8)
# Where no MoE boot calibrates, the dense line's band widens by this (an MoE layer's own kernels' workspace).
MOE_ALLOWANCE = 2.5
# A line no boot of its compile state places borrows the class's others', nearest first: a warm profile holds what an
# eager one does (llama8b at 8,192 and 16,384 batched tokens: 0.88 and 1.72 GiB both ways), a cold one a little more.
FALLBACK = {"eager": ("warm", "cold"), "warm": ("eager", "cold"), "cold": ("warm", "eager")}
# A cold boot holds up to this more than a boot of its model that compiled nothing at the same batched tokens where
# its forward pass sets its peak (llama8b at 16,384: 1.78 GiB cold, 1.72 warm and eager); beyond it, its compile's own
# spike set it (at 8,192: 1.10 against 0.88).
FORWARD_GAP = 0.1
# The spike's batches of hidden states where no boot measured them: issue 42's Mistral-Nemo-12B shape held 1.29 GiB
# cold at 2,048 batched tokens, its 1.25 GiB embedding and two batches of its 19.5 MiB of hidden states.
PRIOR_SPIKE = 2.0
SPIKE_MARGIN = 0.05  # a cold boot this close to its spike is the spike's, where no boot of its model tells


def _key(moe: bool, state: str) -> str:
    return f"activation_{'moe_' if moe else ''}{state}"


def _borrowed(key: str, fits: dict[str, Fit]) -> Fit:
    """A line for a class and compile state no boot shows: the same class's other states' (their band doubled),
    else, for an MoE model, the dense line of the state, then of the others (their band widened by MOE_ALLOWANCE),
    else the prior."""
    moe, state = "moe_" in key, key.rsplit("_", 1)[1]
    tries = [(_key(moe, o), 2.0, 0.0, f"no {state} boot: the {o} line, its band doubled") for o in FALLBACK[state]]
    if moe:
        why = f"no MoE boot: the dense {state} line, its band widened by {MOE_ALLOWANCE:g} GiB"
        tries += [(_key(False, s), 1.0 if s == state else 2.0, MOE_ALLOWANCE, why) for s in (state, *FALLBACK[state])]
    for source, scale, extra, basis in tries:
        if fits[source].boots:
            borrowed = fits[source].model_copy(deep=True)
            borrowed.band_gib = borrowed.band_gib * scale + extra
            borrowed.basis = basis
            return borrowed
    return fits[key]


def _v1_sampler(boots: Sequence[Observation]) -> Fit:
    """The V1 runner's sampling, in bytes a logit, measured between boots of one model and graph mode that differ in
    the logits they sample (max_num_seqs): a boot's peak less the peak its model's boots at the most common number of
    logits reach at its batched tokens (their line, or their boot at those tokens), over the logits between; else the
    prior, vLLM's sort of the fp32 logits (values and int64 indices)."""
    groups: dict[str, list[Observation]] = {}
    for o in (o for o in boots if v1_logits(o.shape, o.serve) and observed_state(o) is not None):
        groups.setdefault(f"{o.shape.model_dump_json()} {observed_state(o)}", []).append(o)
    measured_bytes = []
    for group in groups.values():
        counts = Counter(v1_logits(o.shape, o.serve) for o in group)
        common = max(counts, key=lambda n: (counts[n], n))
        ref = [
            (activation_x(o.shape, o.serve), o.signals.memory.peak_activation_gib or 0.0)
            for o in group
            if v1_logits(o.shape, o.serve) == common
        ]
        ref_line = line(ref, (0.0, 0.0), "") if len({round(x, 9) for x, _ in ref}) > 1 else None
        for o in (o for o in group if v1_logits(o.shape, o.serve) != common):
            x = activation_x(o.shape, o.serve)
            there = at(ref_line, x) if ref_line else next((y for rx, y in ref if abs(rx - x) < 1e-9), None)
            if there is not None:
                gap = (o.signals.memory.peak_activation_gib or 0.0) - there
                measured_bytes.append(gap * GIB / (v1_logits(o.shape, o.serve) - common))
    why = "vLLM's sort of the fp32 logits: values and int64 indices, 12 bytes"
    fit = offset("bytes_per_logit", measured_bytes, V1_SAMPLER_BYTES, why)
    fit.band_gib = 0.0  # in bytes, not GiB: the activation's own band carries the doubt
    return fit


def _forward_peak(o: Observation, boots: Sequence[Observation]) -> float | None:
    """What the forward pass alone held for a cold boot's model at its batched tokens and sampling: the least peak of
    a boot of its model there that compiled nothing or loaded its compile (None: no such boot)."""
    x, logits = activation_x(o.shape, o.serve), v1_logits(o.shape, o.serve)
    peaks = [
        b.signals.memory.peak_activation_gib or 0.0
        for b in boots
        if b.shape == o.shape
        and observed_state(b) in ("unused", "warm")
        and abs(activation_x(b.shape, b.serve) - x) < 1e-9
        and v1_logits(b.shape, b.serve) == logits
    ]
    return min(peaks) if peaks else None


def _spike_fit(bound: Sequence[Observation]) -> Fit:
    """The spike's batches of hidden states by least squares over the boots it set the peak of (the embedding held
    once), its band the farthest boot's miss; the prior where there is none."""
    why = f"prior: the embedding and {PRIOR_SPIKE:g} batches of hidden states (issue 42's Mistral-Nemo-12B shape)"
    points = [
        (
            hidden_batch_gib(o.shape, o.serve),
            (o.signals.memory.peak_activation_gib or 0.0) - embedding_gib(o.shape, o.serve),
        )
        for o in bound
    ]
    if not points:
        return Fit(coefficients={SPIKE: PRIOR_SPIKE}, band_gib=SPIKE_MARGIN, boots=0, basis=why)
    batches = sum(x * y for x, y in points) / sum(x * x for x, _ in points)
    band = max(abs(y - batches * x) for x, y in points) + ROUNDING_GIB
    basis = f"the embedding and {batches:.2f} batches of hidden states, over {len(points)} cold boots"
    return Fit(coefficients={SPIKE: batches}, band_gib=band, boots=len(points), basis=basis)


def _spike(boots: Sequence[Observation]) -> tuple[Fit, list[Observation]]:
    """A cold compile's own spike, from the cold boots it set the peak of: those holding more than FORWARD_GAP over a
    boot of their model that compiled nothing at the same batched tokens; then, where no such boot tells, those that
    lie within SPIKE_MARGIN of the spike those (or the prior) place."""
    cold = [o for o in boots if observed_state(o) == "cold"]
    sure = []
    for o in cold:
        forward = _forward_peak(o, boots)
        if forward is not None and (o.signals.memory.peak_activation_gib or 0.0) - forward > FORWARD_GAP:
            sure.append(o)
    first = _spike_fit(sure)
    near = [
        o
        for o in cold
        if o not in sure
        and abs((o.signals.memory.peak_activation_gib or 0.0) - spike_gib(first, o.shape, o.serve)) <= SPIKE_MARGIN
    ]
    return _spike_fit([*sure, *near]), [*sure, *near]


def _activation_fits(
    boots: Sequence[Observation], bytes_per_logit: float, spiked: Sequence[Observation]
) -> tuple[dict[str, Fit], dict[str, list[ModelShape]]]:
    """A line per class and compile state, placed by the boots whose forward pass set the peak (less the V1
    runner's sampling; a cold boot its compile's spike set is left to the spike); an MoE line has an intercept per
    architecture (MoE architectures' profile peaks differ by a part no config term explains) and one slope, the
    batched tokens' cost, shared. With them, the models whose boots placed each line."""
    skip = {o.source for o in spiked}
    placing: dict[str, list[Observation]] = {key: [] for key in KEYS}
    for o in boots:
        state = observed_state(o)
        if state is not None and o.source not in skip and forward_bound(o.shape, o.serve):
            placing[activation_key(o.shape, o.serve, state)].append(o)

    def points(key: str) -> dict[str, list[tuple[float, float]]]:
        found: dict[str, list[tuple[float, float]]] = {}
        for o in placing[key]:
            seen = (o.signals.memory.peak_activation_gib or 0.0) - v1_sampler_gib(o.shape, o.serve, bytes_per_logit)
            point = (activation_x(o.shape, o.serve), seen)
            found.setdefault(o.shape.model_dump_json() if "moe_" in key else "", []).append(point)
        return found

    why = "the MLP's peak bytes per batched token, and 0.25 GiB"
    fits = {key: grouped_line(points(key), PRIOR_ACTIVATION, why) for key in KEYS}
    for key, fit in fits.items():  # boots at one size only: the slope another state of the class measured
        moe, kind = "moe_" in key, key.rsplit("_", 1)[1]
        other = next((_key(moe, s) for s in FALLBACK[kind] if sized(fits[_key(moe, s)])), None)
        if fit.boots and not sized(fit) and other is not None:
            slope = (fits[other].coefficients["slope"], 0.0)
            fits[key] = grouped_line(points(key), slope, f"the {other.rsplit('_', 1)[1]} line's slope")
    lines = {key: _shapes(placing[key]) for key in KEYS}
    return {key: fit if fit.boots else _borrowed(key, fits) for key, fit in fits.items()}, lines


def _shapes(boots: Sequence[Observation]) -> list[ModelShape]:
    return list({o.shape.model_dump_json(): o.shape for o in boots}.values())


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
    sampler = _v1_sampler(boots)
    spike, spiked = _spike(boots)
    activation, lines = _activation_fits(boots, sampler.coefficients["bytes_per_logit"], spiked)
    terms = {
        "weights_gib": offset("weights_gib", weights, 0.0, "the parameters and the rope table, nothing more"),
        "v1_sampler_bytes": sampler,
        **activation,
        SPIKE: spike,
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
        shapes=_shapes(boots),
        lines={**lines, SPIKE: _shapes(spiked)},
        sources=sorted({o.source for o in boots}),
        left_out=sorted(left_out),
    )


__all__ = ["calibrate"]
