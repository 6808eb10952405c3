"""A ladder climbed on the `slurm` target two ways, with the fake engine: `allocation: held` (one allocation, every
rung a job step in it: one queue wait, the same node) against `per_boot` (one job per rung: a queue wait each).
The queue waits and boots are Slurm's own figures (sacct's Submit and Start of each job).
"""

from __future__ import annotations

import shutil
import time
from datetime import datetime
from pathlib import Path

import pytest

from redline.ledger import read_ladder
from redline.models import BootStatus
from redline.ops.ladder.plan import ladder_init
from redline.ops.ladder.rung import climb
from redline.ops.requests import LadderInitRequest
from redline.targets.slurm import SlurmTarget
from tests.conftest import processes_naming
from tests.server.helpers import LLAMA8B
from tests.slurm.conftest import SlurmCluster

pytestmark = pytest.mark.anyio


def new_ladder(root: Path) -> Path:
    """The fake engine's ladder (its model copied under root), its servers on port 8000 of their node."""
    model = root / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    path = root / "l8b.yml"
    request = LadderInitRequest(
        model="llama8b",
        model_path=str(model),
        floor_max_model_len=32768,
        floor_max_num_batched_tokens=8192,
        max_position_embeddings=131072,
        fixed={"port": 8000},
    )
    ladder_init(path, request)
    return path


def seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


async def test_a_ladder_climbs_inside_one_allocation_one_queue_wait_and_one_node_against_a_job_per_rung(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    figures = {}
    for mode in ("held", "per_boot"):
        root = tmp_path / mode
        ladder = new_ladder(root)
        spec = slurm_cluster.spec(root / "work", allocation=mode, hold_idle_s=30)
        async with SlurmTarget(slurm_target_name, spec) as target:
            assert target.max_servers == (1 if mode == "held" else spec.max_jobs)
            t0 = time.monotonic()
            report = await climb(ladder, target, i_understand_this_submits_jobs=True)
            wall = time.monotonic() - t0
            names = await target.teardown()  # held: the allocation; per boot: nothing is left to cancel
        state = read_ladder(ladder)
        assert report.final.route == "done" and state.ceiling is not None, report.steps
        folders = [Path((r.log_source or "").partition(":")[2]).parent for r in state.rungs]  # target:run/boot.log
        rung_jobs = [(f / "job").read_text().strip() for f in folders]
        nodes = {(f / "node").read_text().strip() for f in folders}
        jobs = sorted({j.partition(".")[0] for j in rung_jobs}, key=int)
        rows = {r["JobID"]: r for r in slurm_cluster.sacct(*jobs)}
        waits = [seconds(rows[j]["Submit"], rows[j]["Start"]) for j in jobs]
        boots = [r.boot_s for r in state.rungs]
        figures[mode] = (len(state.rungs), len(jobs), sum(waits), nodes)
        print(
            f"slurm {mode}: {len(state.rungs)} rungs in {len(jobs)} job(s), queue waits {waits} s (sacct), "
            f"boots {boots} s, climb {wall:.1f} s"
        )
        if mode == "held":
            assert len(jobs) == 1 and all("." in j for j in rung_jobs)  # every rung a step of the one allocation
            assert names == [f"rt-{ladder.stem}-hold"]
            assert len(nodes) == 1  # one node, by construction: every rung's run folder records it, and sacct agrees
            assert {rows[j]["NodeList"] for j in rung_jobs} == nodes
        else:
            assert len(jobs) == len(state.rungs) and names == []
            units = [rows[j]["Comment"].rpartition(",unit=")[2].split(",")[0] for j in jobs]
            assert units == [f"rung-{r.index}" for r in state.rungs]  # each job's comment names its rung
        assert all(r.status in (BootStatus.BOOT_OK, BootStatus.OOM_KV_CACHE) for r in state.rungs)
    assert figures["held"][0] == figures["per_boot"][0] > 1  # the same climb, rung for rung
    assert slurm_cluster.jobs(slurm_target_name) == []
    assert processes_naming(tmp_path) == []
