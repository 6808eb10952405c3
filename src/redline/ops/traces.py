"""A trace workload's trace, read: the one way a campaign or an A/B reads the trace files its workloads name, each a
path relative to the experiment's file and inside the workspace (ops/workspace.py `inside`), read as any file a person
hands redline (inputs.py `read_text`: a regular file, size-capped), its rows checked as untrusted input
(models/trace.py), its window taken.

    spec = with_traces(spec, Path("campaigns/c1.yml"), workspace)   # each trace workload replays its trace's window
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from redline.errors import InputError
from redline.inputs import read_text
from redline.models.trace import MAX_TRACE_BYTES, parse_trace
from redline.models.workloads import WorkloadSpec
from redline.ops.workspace import inside, workspace_of

Spec = TypeVar("Spec", bound=BaseModel)


def read_trace(shape: WorkloadSpec, field: str, file: Path, workspace: Path | None) -> WorkloadSpec:
    """The workload with its trace read and its window taken; InputError naming `field` for a file outside the
    workspace, one that cannot be read, a hostile row (its line named), or a window or load the trace cannot give."""
    assert shape.trace is not None  # a trace workload names its trace (models/workloads.py)
    root = workspace if workspace is not None else workspace_of(file.resolve())
    path = inside(root, shape.trace, field, base=file.parent, example="../traces/chat.jsonl")
    trace = parse_trace(read_text(path, f"{field} {shape.trace}", max_bytes=MAX_TRACE_BYTES), f"{field} {shape.trace}")
    w = shape.window
    try:
        trace = trace.window(w.start_s, w.end_s, w.first, w.rows) if w is not None else trace
    except ValueError as exc:
        raise InputError(f"{field}: {exc}") from exc
    if w is not None and (w.start_s is not None or w.end_s is not None) and not trace.arrivals:
        raise InputError(f"{field}: the trace has no arrival times, so a window in seconds takes nothing: give rows")
    replays = shape.speedups or ([] if shape.rates or shape.concurrencies else [1.0])
    if replays and not trace.arrivals:
        raise InputError(
            f"{field}: the trace has no arrival times to replay: give the workload rates: or concurrencies: to send "
            "its lengths at"
        )
    return shape.with_trace(trace)


def with_traces(spec: Spec, file: Path, workspace: Path | None = None) -> Spec:
    """The experiment (a campaign, an A/B) with each trace workload's trace read; as it is where it has none."""
    single: WorkloadSpec | None = getattr(spec, "workload", None)
    named: dict[str, WorkloadSpec] | None = getattr(spec, "workloads", None)
    if single is not None and single.dataset == "trace":
        return spec.model_copy(update={"workload": read_trace(single, "workload.trace", file, workspace)})
    if named is not None and any(w.dataset == "trace" for w in named.values()):
        read = {
            name: read_trace(w, f"workloads.{name}.trace", file, workspace) if w.dataset == "trace" else w
            for name, w in named.items()
        }
        return spec.model_copy(update={"workloads": read})
    return spec


__all__ = ["read_trace", "with_traces"]
