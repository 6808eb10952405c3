"""The levers that can change what a model answers, not only how fast it answers: the one list of them.

A champion that turns one of these on against its baseline is not closed nor written back into a deploy until its
accuracy gate has passed (policy/accuracy.py, run by the A/B: ops/ab/accuracy.py); until then it is refused, with the
lever named.

    quality_risks(champion, baseline)   # ["kv_cache_dtype fp8"]: what the champion risks that the baseline did not

Another checkpoint than the baseline's (an FP8 or otherwise quantized copy of the model, as a weight-quantization
lever is usually tried) is a risk too: its answers are the ones to check.
"""

from __future__ import annotations

from redline.models import ServeConfig
from redline.policy.deploy_args import option

# options (as policy/deploy_args.option names them) that quantize, drop precision or let a draft propose tokens
RISKY_OPTIONS = ("quantization", "kv-cache-dtype", "dtype", "speculative", "spec-", "calculate-kv-scales")


def _risks(config: ServeConfig) -> set[str]:
    found = set()
    if config.kv_cache_dtype not in (None, "auto"):
        found.add(f"kv_cache_dtype {config.kv_cache_dtype}")
    for flag in config.extra_flags:
        name = option(flag)
        if name is not None and name.startswith(RISKY_OPTIONS):
            found.add(flag)
    return found


def quality_risks(champion: ServeConfig, baseline: ServeConfig | None) -> list[str]:
    """What the champion risks for the model's answers that its baseline did not already (all of it, with none)."""
    if baseline is None:
        return sorted(_risks(champion))
    other = {f"model {champion.model}"} if champion.model != baseline.model else set()
    return sorted((_risks(champion) - _risks(baseline)) | other)


__all__ = ["RISKY_OPTIONS", "quality_risks"]
