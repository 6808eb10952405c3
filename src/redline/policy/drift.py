"""Drift: a boot whose KV cache lies outside the band the memory model predicted for it before it ran (a ladder's
rung, a campaign's cell, an A/B's arm: each keeps the one prediction memory_predict gives). Pure; the boot,
recorded, is one more the model calibrates on."""

from redline.models.boot import BootSignals
from redline.models.memory import PredictedKv


def kv_drift(predicted: PredictedKv | None, signals: BootSignals) -> str | None:
    """By how much the booted KV cache (the engine's whole count) left the predicted band (whole counts too); None
    inside it, without a prediction, or when nothing booted to compare."""
    seen = signals.kv_cache_tokens
    if predicted is None or seen is None or not signals.status.booted:
        return None
    p, low, high = predicted.kv_cache_tokens, predicted.kv_cache_tokens_low, predicted.kv_cache_tokens_high
    if low <= seen <= high or _other_state(predicted, signals, above=seen > high):
        return None
    return (
        f"drift: {seen:,} KV tokens booted, {p:,} predicted ({low:,} to {high:,}), "
        f"{100 * (seen - p) / p:+.2f}%: this boot is recorded, and the next prediction of its setup (model, engine "
        "release, device, config) is anchored on it, its band covering it"
    )


def _other_state(predicted: PredictedKv, signals: BootSignals, *, above: bool) -> bool:
    """Whether the boot found the other torch.compile cache than the one predicted for, and lies where that puts it:
    a warm boot above a cold prediction (a replicate loads what the first boot compiled), a cold one below a warm
    one. No drift: the prediction was for another boot; the boot still calibrates its own state's terms."""
    said, found = predicted.compile_cache, signals.compile_cache
    return (said, found, above) in (("cold", "warm", True), ("warm", "cold", False))


__all__ = ["kv_drift"]
