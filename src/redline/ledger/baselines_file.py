"""baselines.yml: the named baselines of a workspace, read (a person may edit it; comments are kept on write).

    read_baselines(workspace).baselines["prod"].points     # empty when the file is missing

Below the operations that record, diff and resolve baselines (ops/evidence/baseline.py, ops/evidence/sources.py).
"""

from __future__ import annotations

from pathlib import Path

from redline.ledger.edited_yaml import read_edited
from redline.models.baseline import BaselinesFile

BASELINES = "baselines.yml"
WHAT = "baselines file"
HEADER = (
    "redline baselines: named, recorded results (one point per concurrency, each with its full context) that\n"
    "later results are diffed against with perf_baseline_diff. Comments you add here are kept."
)


def baselines_path(workspace: Path) -> Path:
    return workspace / BASELINES


def read_baselines(workspace: Path) -> BaselinesFile:
    return read_edited(baselines_path(workspace), BaselinesFile, WHAT)


__all__ = ["BASELINES", "HEADER", "WHAT", "baselines_path", "read_baselines"]
