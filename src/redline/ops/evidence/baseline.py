"""perf_baseline_record and perf_baseline_diff: named baselines in baselines.yml, and a result diffed against one.

    perf_baseline_record(workspace, PerfBaselineRecordRequest(name="prod", ab="fp8kv", arm="base"))
    diff = perf_baseline_diff(workspace, PerfBaselineDiffRequest(baseline="prod", ab="fp8kv", arm="fp8"))
    diff.colour     # GREEN, YELLOW or RED (policy/baseline_diff.py); mismatched contexts are refused

baselines.yml is a file a person may edit and comment: it is changed in place, comments kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from redline.errors import InputError
from redline.ledger.baselines_file import BASELINES_FILE, baselines_path, read_baselines
from redline.models.baseline import Baseline, BaselineDiff, BaselineRecorded, BaselinesFile
from redline.models.metrics import Band
from redline.ops.evidence.sources import ResultRef, resolve_ref
from redline.ops.requests_evidence import PerfBaselineDiffRequest, PerfBaselineRecordRequest
from redline.policy import baseline_diff as diffs


def perf_baseline_record(workspace: Path, request: PerfBaselineRecordRequest) -> BaselineRecorded:
    """Record the named result as baseline `request.name`; an existing name is replaced only when asked."""
    r = request
    found = resolve_ref(workspace, ResultRef.named(r))
    baseline = Baseline(
        source=found.source, note=r.note or None, recorded_at=datetime.now(UTC), points=found.points, noise=found.noise
    )
    path = baselines_path(workspace)

    def change(current: BaselinesFile) -> tuple[BaselinesFile, bool]:
        there = r.name in current.baselines
        if there and not r.replace:
            raise InputError(
                f"a baseline named {r.name!r} is already in {BASELINES_FILE.name}: pass replace=true to replace "
                "it, or give another name"
            )
        return current.model_copy(update={"baselines": {**current.baselines, r.name: baseline}}), there

    replaced = BASELINES_FILE.update(path, change)
    return BaselineRecorded(name=r.name, path=BASELINES_FILE.name, replaced=replaced, baseline=baseline)


def perf_baseline_diff(workspace: Path, request: PerfBaselineDiffRequest) -> BaselineDiff:
    """The current result against baseline `request.baseline`: GREEN, YELLOW or RED, each metric with both contexts."""
    r = request
    base = read_baselines(workspace).baselines.get(r.baseline)
    if base is None:
        raise InputError(
            f"no baseline named {r.baseline!r} in {BASELINES_FILE.name}; record one with perf_baseline_record"
        )
    current = resolve_ref(workspace, ResultRef.named(r, baseline=r.against))
    return diffs.diff(
        r.baseline,
        base.points,
        current.points,
        current.source,
        focus=r.focus,
        guarded=r.guarded,
        tolerance_pct=r.tolerance_pct,
        loose_band_pct=r.loose_band_pct,
        noise=measured_noise(base.noise, current.noise),
    )


def measured_noise(base: Mapping[str, Band], current: Mapping[str, Band]) -> dict[str, Band]:
    """Each metric's band measured between the boots behind either side (the one on more degrees of freedom where
    both have one): a campaign's cells are judged by it, as champion_select judges them."""
    out = dict(base)
    for metric, band in current.items():
        if metric not in out or (band.df or 0) > (out[metric].df or 0):
            out[metric] = band
    return out


__all__ = ["baselines_path", "perf_baseline_diff", "perf_baseline_record", "read_baselines"]
