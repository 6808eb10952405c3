"""baselines.yml: the named baselines of a workspace, read (a person may edit it; comments are kept on write).

    read_baselines(workspace).baselines["prod"].points     # empty when the file is missing

Below the operations that record, diff and resolve baselines (ops/evidence/baseline.py, ops/evidence/sources.py).
"""

from __future__ import annotations

from pathlib import Path

from redline.ledger.edited_yaml import EditedFile
from redline.models.baseline import BaselinesFile

BASELINES_FILE = EditedFile(
    "baselines.yml",
    BaselinesFile,
    "baselines file",
    "redline baselines: named, recorded results (one point per concurrency, each with its full context) that\n"
    "later results are diffed against with perf_baseline_diff. Comments you add here are kept.",
)


def baselines_path(workspace: Path) -> Path:
    return workspace / BASELINES_FILE.name


def read_baselines(workspace: Path) -> BaselinesFile:
    return BASELINES_FILE.read(baselines_path(workspace))


__all__ = ["BASELINES_FILE", "baselines_path", "read_baselines"]
