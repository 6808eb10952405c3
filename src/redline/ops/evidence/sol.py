"""Speed-of-light at the edge: the packaged sol-ceilings.yaml, and a measured throughput set against its ceiling.

    figure = sol_figure(context, shape, measured_tokens_per_s=1890.4)   # % of the decode ceiling, and its key

The arithmetic is policy/sol.py's; this module only reads the table and picks the figure's inputs
from its context (the concurrency capped by max_num_seqs, the workload's lengths, the KV dtype).
"""

from __future__ import annotations

from functools import cache

from redline.inputs import packaged_yaml
from redline.models.context import ContextDescriptor
from redline.models.shape import ModelShape
from redline.models.sol import SolFigure, SolTable
from redline.policy.sol import decode_ceiling

TABLE = "sol-ceilings.yaml"


@cache
def sol_table() -> SolTable:
    """The GPU peaks redline ships (src/redline/data/sol-ceilings.yaml)."""
    return packaged_yaml(TABLE, SolTable)


def sol_figure(
    context: ContextDescriptor, shape: ModelShape | None, measured_tokens_per_s: float | None, shape_note: str = ""
) -> SolFigure:
    """The measured output throughput against the decode ceiling of the context's GPU, model and batch."""
    w, serve = context.workload, context.serve
    if w.concurrency is None or w.input_len is None or w.output_len is None:
        return SolFigure(key=None, basis="no ceiling: the workload's concurrency or lengths are unknown")
    batch = min(w.concurrency, serve.max_num_seqs or w.concurrency)
    gpus = max(context.hardware.gpu_count, 1)
    kv = None if context.kv_cache_dtype == "auto" else context.kv_cache_dtype
    return decode_ceiling(
        sol_table(),
        context.hardware.gpu_name,
        shape,
        gpus=gpus,
        dp=context.parallelism.dp,
        batch=batch,
        input_len=w.input_len,
        output_len=w.output_len,
        kv_cache_dtype=kv,
        quantization=context.model.quantization,
        measured_tokens_per_s=measured_tokens_per_s,
        shape_note=shape_note,
    )


__all__ = ["sol_figure", "sol_table"]
