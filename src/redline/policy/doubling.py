"""The `doubling` policy: the seed workflow's ladder, kept for comparison.

Double the climbed knob from the last good rung (capped), smoke-test every
booted rung before the next climb, and take the first context failure as the
ceiling: the last good rung below it. It never reads the KV signal, so from a
floor of 32,768 a model whose true ceiling is 256,848 stops at 131,072.
"""

from collections.abc import Sequence

from redline.models.ladder import Rung

SMOKE_EVERY_RUNG = True


def next_max_model_len(last: Rung, *, min_concurrency: int, block: int, cap: int | None) -> int | None:
    doubled = 2 * last.serve.max_model_len
    return doubled if cap is None else min(doubled, cap)


def retry_max_model_len(failed: Rung, *, min_concurrency: int, block: int, cap: int | None) -> int | None:
    return None  # the seed: an oom_* rung is the ceiling; never retry blindly


def next_max_num_batched_tokens(
    last: Rung, earlier: Sequence[Rung], *, min_concurrency: int, block: int, cap: int
) -> int | None:
    current = last.serve.max_num_batched_tokens
    return None if current is None else min(2 * current, cap)
