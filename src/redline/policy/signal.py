"""The `signal` policy (default): jump straight to what the last boot says fits.

max_model_len: from a boot, the KV cache tokens divided by the concurrency
floor (vLLM sizes the cache in tokens, so C requests of L tokens need C*L);
from a failed boot, vLLM's own "estimated maximum model length". Both are
rounded down to the KV block size and capped by max_position_embeddings.

max_num_batched_tokens: peak activation grows about linearly with it and
comes out of the KV cache. With two boots at different batched tokens the
slope is measured and the next rung spends SAFETY of the KV slack left above
`min_concurrency * max_model_len`; with one boot there is no slope yet, so the
first step doubles. No slack means no climb: activation only grows.

Smoke tests: only the rung at the predicted ceiling (where nothing higher is
predicted to fit) is smoke-tested; a boot that shows headroom climbs straight
on. That is how a climb from a floor of 32,768 confirms its ceiling in two
boots and one smoke test: floor boot, jump to what fits, smoke test.
"""

from collections.abc import Sequence

from redline.models.ladder import Rung

SMOKE_EVERY_RUNG = False
# Share of the measured KV slack a batched-tokens step may spend: activation is
# only about linear, and the KV cache is cut in whole blocks.
SAFETY = 0.9


def round_down(value: float, block: int) -> int:
    return int(value // block) * block


def _capped(value: int, cap: int | None) -> int:
    return value if cap is None else min(value, cap)


def kv_tokens(rung: Rung) -> int | None:
    """The KV cache size in tokens: said outright, or concurrency times its length."""
    s = rung.signals
    if s.kv_cache_tokens is not None:
        return s.kv_cache_tokens
    if s.max_concurrency is not None and s.max_concurrency_tokens is not None:
        return int(s.max_concurrency * s.max_concurrency_tokens)
    return None


def fits(rung: Rung, min_concurrency: int) -> int | None:
    """The longest request of which `min_concurrency` fit in the KV cache this rung saw."""
    tokens = rung.signals.estimated_max_model_len if not rung.status.booted else kv_tokens(rung)
    return None if tokens is None else tokens // min_concurrency


def next_max_model_len(last: Rung, *, min_concurrency: int, block: int, cap: int | None) -> int | None:
    fit = fits(last, min_concurrency)
    return None if fit is None else _capped(round_down(fit, block), cap)


def retry_max_model_len(failed: Rung, *, min_concurrency: int, block: int, cap: int | None) -> int | None:
    """From a context failure (or a boot under the concurrency floor): what its log says fits."""
    return next_max_model_len(failed, min_concurrency=min_concurrency, block=block, cap=cap)


def _slope(last: Rung, earlier: Sequence[Rung]) -> float | None:
    """GiB of peak activation per batched token, between `last` and the nearest other boot."""
    act = last.signals.memory.peak_activation_gib
    others = [
        r
        for r in earlier
        if r.serve.max_num_batched_tokens != last.serve.max_num_batched_tokens
        and r.signals.memory.peak_activation_gib is not None
    ]
    if act is None or not others:
        return None
    mnbt = last.serve.max_num_batched_tokens or 0
    other = min(others, key=lambda r: abs((r.serve.max_num_batched_tokens or 0) - mnbt))
    d_tokens = mnbt - (other.serve.max_num_batched_tokens or 0)
    other_act = other.signals.memory.peak_activation_gib
    assert other_act is not None  # `others` holds only rungs that report a peak
    slope = (act - other_act) / d_tokens
    return slope if slope > 0 else None


def next_max_num_batched_tokens(
    last: Rung, earlier: Sequence[Rung], *, min_concurrency: int, block: int, cap: int
) -> int | None:
    """From the last good boot at the max_model_len ceiling: the batched tokens its KV slack pays for."""
    tokens, gib = kv_tokens(last), last.signals.available_kv_cache_gib
    current = last.serve.max_num_batched_tokens
    if tokens is None or current is None:
        return None
    slack_tokens = tokens - min_concurrency * last.serve.max_model_len
    if slack_tokens <= 0:
        return None
    slope = _slope(last, earlier)
    if slope is None or gib is None:
        return min(2 * current, cap)
    slack_gib = slack_tokens * gib / tokens
    return min(round_down(current + SAFETY * slack_gib / slope, block), cap)


def headroom(rung: Rung, utilization: float, step: float = 0.05, most: float = 0.95) -> str | None:
    """What raising gpu_memory_utilization would buy: all of it goes to the KV cache (weights and activation stay)."""
    total, tokens, gib = rung.signals.memory.device_total_gib, kv_tokens(rung), rung.signals.available_kv_cache_gib
    target = round(min(utilization + step, most), 2)
    if not (total and tokens and gib) or target <= utilization:
        return None
    add_gib = (target - utilization) * total
    add_tokens = int(add_gib * tokens / gib)
    return (
        f"raising gpu_memory_utilization from {utilization} to {target} would add about {add_gib:.2f} GiB "
        f"≈ {add_tokens:,} KV tokens"
    )
