"""What one bench result gives in the one metric table (models/metrics.py), and each metric over trials: a
campaign's verdicts, an A/B's trials and a baseline read a result alike. No I/O.

    found = metrics_of(result, config)                  # every metric of the table the result gives
    found = metrics_of(result, config, TRIAL_METRICS)   # only those named (an A/B's)
    stats = summarize([found, ...])                     # each metric's mean, std and n over the trials that gave it

The derived metrics: per GPU, output throughput (and goodput's) divided by tensor x pipeline x data parallel size
(models/serve.py gpus_of); per user, 1000 / median TPOT. An open-loop bench's send rate and goodput are its reader's
(engines/vllm/bench.py), from the client's per-request figures.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from redline.models.bench import BenchResult
from redline.models.campaign_results import Stat
from redline.models.metrics import METRICS
from redline.models.serve import ServeConfig, gpus_of


def metrics_of(result: BenchResult, config: ServeConfig, names: Iterable[str] = METRICS) -> dict[str, float]:
    """The metrics named (default: the whole table) that one bench result of `config` gives, the derived ones
    included; absent ones are left out."""
    found = {name: float(v) for name in METRICS if isinstance(v := getattr(result, name, None), int | float)}
    if "output_throughput" in found:
        found["output_throughput_per_gpu"] = found["output_throughput"] / gpus_of(config)
    if "goodput_output_throughput" in found:
        found["goodput_output_throughput_per_gpu"] = found["goodput_output_throughput"] / gpus_of(config)
    if found.get("median_tpot_ms"):
        found["tokens_per_s_per_user"] = 1000.0 / found["median_tpot_ms"]
    wanted = set(names)
    return {name: value for name, value in found.items() if name in wanted}


def stat(values: Sequence[float]) -> Stat:
    """The mean, the std (None for one value) and every value."""
    std = statistics.stdev(values) if len(values) > 1 else None
    return Stat(mean=statistics.fmean(values), std=std, n=len(values), values=list(values))


def summarize(per_trial: Sequence[dict[str, float]], names: Iterable[str] = METRICS) -> dict[str, Stat]:
    """Each metric named (default: the whole table, in its order) over the trials that gave it."""
    present = [m for m in names if any(m in t for t in per_trial)]
    return {m: stat([t[m] for t in per_trial if m in t]) for m in present}


__all__ = ["metrics_of", "stat", "summarize"]
