"""Drift: a boot whose KV cache lies outside the band the memory model predicted for it before it ran (a ladder's
rung, a campaign's cell). Pure; the boot, recorded, is one more the model calibrates on."""

from redline.models.boot import BootSignals
from redline.models.campaign_plan import CellPrediction


def kv_drift(predicted: int, low: int, high: int, signals: BootSignals) -> str | None:
    """By how much the booted KV cache (the engine's whole count) left the predicted band; None inside it, or when
    nothing booted to compare."""
    seen = signals.kv_cache_tokens
    if seen is None or not signals.status.booted or low <= seen <= high:
        return None
    off = 100 * (seen - predicted) / predicted
    return (
        f"drift: {seen:,} KV tokens booted, {predicted:,} predicted ({low:,} to {high:,}), "
        f"{off:+.2f}%: the model refits on this boot"
    )


def plan_drift(predicted: CellPrediction | None, signals: BootSignals) -> str | None:
    """A booted cell's or arm's KV cache outside the band its plan predicted, compared whole (with the reserved
    tokens)."""
    if predicted is None:
        return None
    reserved = predicted.reserved_tokens
    low, high = predicted.kv_cache_tokens_low + reserved, predicted.kv_cache_tokens_high + reserved
    return kv_drift(predicted.kv_cache_tokens, low, high, signals)


__all__ = ["plan_drift", "kv_drift"]
