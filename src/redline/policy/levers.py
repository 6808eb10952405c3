"""The next levers worth trying after a measured result, ranked by expected gain per cost: a small rule table.

    levers = next_levers(LeverInput(claim="throughput", serve=config, concurrencies=[1, 16], sol=figure))

Every gain here is a prediction (labelled so), worked from the speed-of-light split of a decode
step's bytes where one is known: fp8 KV halves the KV bytes, fp8 weights halve the weight bytes,
a doubled batch shares the weight read. Each lever names the gate that proves or refutes it.

Levers are grounded in the run: none that needs a GPU on a host where none was seen (CUDA graphs, fp8
weights, tensor parallelism), no concurrency the KV cache the boot reported cannot hold at the
workload's lengths, no max_num_batched_tokens above the ceiling a ladder proved. A lever that cannot
apply is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from redline.models.known_good import NO_GPU
from redline.models.lever import Cost, Lever
from redline.models.serve import ServeConfig, is_eager
from redline.models.sol import SolFigure

COST_WEIGHT: dict[Cost, float] = {"low": 1.0, "medium": 2.0, "high": 4.0}
AB_BOOTS = 6  # two arms x three trials
MEMORY_WALL_PCT = 85.0  # above this % of the decode ceiling, only levers that cut bytes can help
HEADROOM_PCT = 60.0  # below this, the batch is worth raising
DEFAULT_WEIGHTS_SHARE = 0.8  # a decode step's weight share when no ceiling was worked (a small batch of a dense model)


@dataclass(frozen=True)
class LeverInput:
    """What the rules look at: the claim, the config that won (or the baseline), and how close it is to SoL."""

    claim: str  # throughput | latency
    serve: ServeConfig
    concurrencies: Sequence[int]
    sol: SolFigure | None = None  # at the top concurrency
    quantization: str | None = None
    hardware: str | None = None  # the GPU the run used, NO_GPU ("cpu") where none was seen; None: not known
    kv_tokens: int | None = None  # the KV cache the boot reported, in tokens
    tokens_per_request: int | None = None  # the workload's input_len + output_len: what one request holds at its end
    batched_tokens_ceiling: int | None = None  # the max_num_batched_tokens the ladder proved, where it has a ceiling

    @property
    def on_cpu(self) -> bool:
        """The run's host had no GPU: no CUDA graphs, no fp8 weight kernels, no GPUs to split the weights over."""
        return self.hardware == NO_GPU

    @property
    def fits(self) -> int | None:
        """The most requests the KV cache holds at once, each at its full length; None when either is unknown."""
        if self.kv_tokens is None or not self.tokens_per_request:
            return None
        return self.kv_tokens // self.tokens_per_request

    @property
    def weights_share(self) -> float:
        share = self.sol.weights_share if self.sol is not None else None
        return DEFAULT_WEIGHTS_SHARE if share is None else share

    @property
    def pct(self) -> float | None:
        return self.sol.pct_of_ceiling if self.sol is not None else None

    @property
    def basis(self) -> str:
        if self.sol is not None and self.sol.weights_share is not None:
            share = f"{self.weights_share:.0%} weights, {self.sol.key}"
            return f"from the decode bytes split at the top concurrency ({share})"
        return f"assuming {DEFAULT_WEIGHTS_SHARE:.0%} of a decode step's bytes are weights (no ceiling was worked)"


def _lever(lever: str, change: str, gain: float, expected: str, cost: Cost, boots: int, gate: str) -> Lever:
    gain = round(max(gain, 0.0), 1)
    return Lever(
        lever=lever,
        change=change,
        expected_gain_pct=gain,
        expected=expected,
        cost=cost,
        cost_boots=boots,
        score=round(gain / COST_WEIGHT[cost], 2),
        gate=gate,
    )


def _bytes_cut(share: float) -> float:
    """% more tokens/s when a step reads `share` fewer of its bytes."""
    return (1.0 / (1.0 - share) - 1.0) * 100.0


def cuda_graphs(x: LeverInput) -> Lever | None:
    if x.on_cpu or not is_eager(x.serve):
        return None
    gain = 30.0 if x.claim == "latency" else 15.0
    return _lever(
        "cuda_graphs",
        "drop enforce_eager (cudagraph_mode FULL_AND_PIECEWISE)",
        gain,
        f"lower TPOT, about +{gain:g}% (host launch overhead removed; typical of small batches)",
        "low",
        AB_BOOTS,
        "ab_run every arm with CUDA graphs (matched_graphs): the champion must still win, VERDICT, on median TPOT",
    )


def _kv_fit(x: LeverInput, c: int) -> str:
    if x.fits is None or x.kv_tokens is None or x.tokens_per_request is None:
        return "if the KV cache holds twice the batch"
    need = c * x.tokens_per_request
    return f"the KV cache holds {x.kv_tokens:,} tokens, c={c} needs {c} x {x.tokens_per_request:,} = {need:,}"


def bigger_batch(x: LeverInput) -> Lever | None:
    """Twice the top concurrency, or as many as the KV cache the boot reported holds; none when it holds no more."""
    if x.claim != "throughput" or (x.pct is not None and x.pct >= HEADROOM_PCT):
        return None
    top = max(x.concurrencies)
    c = 2 * top if x.fits is None else min(2 * top, x.fits)
    if c <= top:
        return None  # the KV cache holds no more requests at these lengths than the top concurrency
    share = x.weights_share
    k = c / top
    gain = share * (k - 1) / (k - share * (k - 1)) * 100.0  # the ceiling at k x the batch against the one now
    return _lever(
        "bigger_batch",
        f"raise the top concurrency to {c} (max_num_seqs >= {c})",
        gain,
        f"up to +{gain:.0f}% output tokens/s ({_kv_fit(x, c)}; {x.basis})",
        "low",
        AB_BOOTS,
        f"campaign_run at concurrencies up to {c}, then ab_run at c={c}: output "
        "throughput up beyond the noise with median TPOT inside the SLA, VERDICT",
    )


def fp8_kv_cache(x: LeverInput) -> Lever | None:
    if (x.serve.kv_cache_dtype or "auto") not in ("auto", "bfloat16", "float16"):
        return None
    gain = _bytes_cut((1.0 - x.weights_share) / 2)
    return _lever(
        "fp8_kv_cache",
        "kv_cache_dtype: fp8",
        gain,
        f"about +{gain:.0f}% on the decode ceiling (KV bytes halved), and twice the KV tokens ({x.basis})",
        "medium",
        AB_BOOTS,
        "ab_run kv_cache_dtype fp8 against auto, VERDICT on the claim's metric, and "
        "an accuracy eval inside its tolerance before shipping",
    )


def fp8_weights(x: LeverInput) -> Lever | None:
    if x.on_cpu or x.quantization is not None:
        return None
    gain = _bytes_cut(x.weights_share / 2)
    return _lever(
        "fp8_weights",
        "an FP8 checkpoint (or --quantization=fp8)",
        gain,
        f"about +{gain:.0f}% on the decode ceiling (weight bytes halved; {x.basis})",
        "high",
        AB_BOOTS,
        "ab_run the fp8 checkpoint against the bf16 one, VERDICT on the claim's metric, and an accuracy "
        "eval inside its tolerance",
    )


def batched_tokens(x: LeverInput) -> Lever | None:
    """Larger prefill chunks, never above the max_num_batched_tokens the ladder proved."""
    mnbt = x.serve.max_num_batched_tokens
    if x.claim != "throughput" or (mnbt is not None and mnbt > 8192):
        return None
    now = mnbt or 8192
    cap = x.batched_tokens_ceiling
    more = [v for v in (2 * now, 4 * now) if cap is None or v <= cap]
    if not more:
        return None  # the ladder's ceiling is at or below twice the value now
    grid = ", ".join(map(str, [now, *more]))
    under = f"; at most the ladder's ceiling, {cap:,}" if cap is not None else ""
    return _lever(
        "max_num_batched_tokens",
        f"max_num_batched_tokens {now} -> {', '.join(map(str, more))}",
        5.0,
        f"a few % more throughput from larger prefill chunks (a rule of thumb, not a measurement{under})",
        "low",
        3,
        f"campaign_run a grid of max_num_batched_tokens [{grid}]: champion_select "
        "beyond the noise band, p99 TTFT inside the SLA, then ab_run",
    )


def speculative_decoding(x: LeverInput) -> Lever | None:
    if x.claim != "latency":
        return None
    return _lever(
        "speculative_decoding",
        "a draft model or n-gram speculation (--speculative-config)",
        30.0,
        "about +30% tokens/s per user at low concurrency (several tokens per weight read), less at high",
        "high",
        AB_BOOTS,
        "ab_run at c=1 and 4, a latency claim: median TPOT lower, VERDICT, and the acceptance rate logged",
    )


def tensor_parallel(x: LeverInput) -> Lever | None:
    if x.on_cpu or x.claim != "latency" or x.serve.tensor_parallel_size != 1:
        return None
    gain = _bytes_cut(x.weights_share / 2)
    return _lever(
        "tensor_parallel",
        "tensor_parallel_size 2",
        gain,
        f"lower TPOT, up to +{gain:.0f}% (each GPU reads half the weights; twice the GPUs)",
        "high",
        AB_BOOTS,
        "ab_run TP 2 against TP 1 (a latency claim on median TPOT, VERDICT), and tokens/s per GPU reported beside it",
    )


RULE_TABLE: tuple[Callable[[LeverInput], Lever | None], ...] = (
    cuda_graphs,
    bigger_batch,
    fp8_kv_cache,
    fp8_weights,
    batched_tokens,
    speculative_decoding,
    tensor_parallel,
)
CUTS_BYTES = frozenset({"fp8_kv_cache", "fp8_weights", "speculative_decoding"})


def next_levers(x: LeverInput, top: int = 5) -> list[Lever]:
    """The levers that apply, best expected gain per cost first; at the memory wall only those that cut bytes."""
    found = [lever for rule in RULE_TABLE if (lever := rule(x)) is not None]
    if x.pct is not None and x.pct >= MEMORY_WALL_PCT:
        found = [lever for lever in found if lever.lever in CUTS_BYTES]
    return sorted(found, key=lambda lever: (-lever.score, lever.lever))[:top]


__all__ = ["LeverInput", "RULE_TABLE", "next_levers"]
