"""A third kind of experiment on the wing (issue 39, item 6): a campaign's cell probed for its load boundary on a boot
of its own (ops/campaign/probe.py), planned, resumed and refused by the wing's one pipeline, on the in-memory target
(its benches: the real H200 llama8b bench, p99 TTFT 436 ms at any load)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from redline.errors import InputError
from redline.models.load_boundary import BoundarySpec
from redline.ops.campaign.probe import probe_run
from tests.server.helpers import LLAMA8B
from tests.targets.memory_target import MemoryTarget

BOUNDARY = BoundarySpec(lowest=1, highest=8, repeats=1)


def campaign(tmp_path: Path, p99_ttft_ms: float = 10_000, mnbt: int = 4096) -> Path:
    model = tmp_path / "models" / "llama8b"
    model.mkdir(parents=True, exist_ok=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    spec = {
        "name": "c1",
        "target": "local",
        "model": str(model),
        "base": {"max_model_len": 4096},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1],
        "warmup_requests": 2,
        "focus": "goodput",
        "sla": {"p99_ttft_ms": p99_ttft_ms},
        "cells": [{"name": "a", "max_num_batched_tokens": 2048}, {"name": "b", "max_num_batched_tokens": mnbt}],
    }
    path = tmp_path / "campaigns" / "c1.yml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(spec))
    return path


def probe(path: Path, target: MemoryTarget, **kw: object):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        return await probe_run(path, ["b"], target, i_understand_this_submits_jobs=True, boundary=BOUNDARY, **kw)

    return anyio.run(go)


def test_a_cell_s_boundary_is_probed_on_one_boot_and_a_rerun_resumes(tmp_path: Path) -> None:
    path, target = campaign(tmp_path), MemoryTarget()
    result = probe(path, target)
    [record] = result.probed
    assert record.cell == "b" and record.ok and record.serve.max_num_batched_tokens == 4096
    assert record.boundary is not None and record.boundary.concurrency == 8 and record.boundary.finished
    assert len(target.started) == 1 and record.benches == len(target.benches) - 1  # the warm-up, then the probes
    assert record.serve.max_num_seqs == 8  # raised to the probe's highest concurrency, as a goodput campaign's cells
    kept = tmp_path / "campaigns" / "c1" / "probes" / "cells" / "b" / "boundary.yml"
    assert kept.is_file() and not (tmp_path / "campaigns" / "c1" / "cells").exists()  # its own layout
    again = probe(path, MemoryTarget())
    assert again.probed == [] and "probed before" in again.summary  # the record says it is done


def test_a_limit_no_load_holds_is_said_and_a_dry_run_starts_nothing(tmp_path: Path) -> None:
    target = MemoryTarget()
    dry = probe(campaign(tmp_path, p99_ttft_ms=100), target, dry_run=True)
    assert dry.dry_run and [c.name for c in dry.planned] == ["b"] and target.started == []
    assert dry.planned[0].predicted is not None  # the wing's prediction, on the memory target's H200
    [record] = probe(campaign(tmp_path, p99_ttft_ms=100), target).probed
    assert record.boundary is not None and record.boundary.concurrency is None  # not even the lowest held
    assert record.boundary.binding == "p99_ttft_ms"


def test_a_record_of_another_config_is_refused_by_the_wing_s_resume_check(tmp_path: Path) -> None:
    probe(campaign(tmp_path), MemoryTarget())
    with pytest.raises(InputError, match="probe 'b' has a boundary made with another serve config"):
        probe(campaign(tmp_path, mnbt=8192), MemoryTarget())
    with pytest.raises(InputError, match="cells: z not in the campaign"):
        anyio.run(lambda: probe_run(campaign(tmp_path), ["z"], MemoryTarget(), i_understand_this_submits_jobs=True))
