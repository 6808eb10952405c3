"""Campaign cells at once on the `slurm` target: a 2-cell campaign with `parallel: 2` is two jobs, each its own GPU,
both servers on port 8000 (each node, or job, has its address), with the fake engine; the cells overlap in time.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from redline.ledger.campaign_file import cells_of, read_verdict
from redline.ops.campaign.run import campaign_run
from redline.targets.slurm import SlurmTarget
from tests.campaign.helpers import make_fake, wait_until_gone
from tests.slurm.conftest import SlurmCluster

pytestmark = pytest.mark.anyio
CELLS = ("mnbt2048", "mnbt8192")


async def test_a_parallel_campaign_runs_its_two_cells_as_two_jobs_at_once_each_with_its_own_gpu(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    fake = make_fake(tmp_path, FAKE_VLLM_BENCH_S="1")  # a cell of a warm-up and two benches takes over 3 s
    path = fake.write(target=slurm_target_name, parallel=2, replicates=0, base={"max_model_len": 4096, "port": 8000})
    spec = slurm_cluster.spec(tmp_path / "work", env=fake.engine_env)
    async with SlurmTarget(slurm_target_name, spec) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [(o.cell, o.verdict) for o in result.ran] == [(c, "green") for c in CELLS], result.reason
    folders = sorted((tmp_path / "work" / "runs").iterdir())
    jobs = [(f / "job").read_text().strip() for f in folders]
    assert len(jobs) == 2 and all(j.isdigit() for j in jobs) and len(set(jobs)) == 2  # a job per cell
    rows = {r["JobID"]: r for r in slurm_cluster.sacct(*jobs)}
    start, end = ([datetime.fromisoformat(rows[j][k]) for j in jobs] for k in ("Start", "End"))
    assert start[0] < end[1] and start[1] < end[0], "the two jobs did not run at once"
    units = sorted(rows[j]["Comment"].rpartition(",unit=")[2] for j in jobs)  # each job's comment names its cell
    assert units == [f"cell-{c}" for c in CELLS], [rows[j]["Comment"] for j in jobs]
    gpus = {((f / "node").read_text().strip(), (f / "gpus").read_text().strip()) for f in folders}
    assert len(gpus) == 2 and all(g for _, g in gpus), gpus  # each its own GPU: (node, index) apart
    a, b = (read_verdict(fake.campaigns / "c1", c) for c in CELLS)
    assert a is not None and b is not None and a.started_at < b.ended_at and b.started_at < a.ended_at
    for v in (a, b):  # the server's metrics read around each bench by a step inside its job (bash's /dev/tcp)
        check = v.results[1].repeats[0].checks[0]  # dev mode off on a slurm target: kept clean by fresh prompts
        assert check.ok and check.clean_by == "fresh prompts", check.said
        assert (
            check.said.startswith(
                f"prefix cache not emptied before the bench (VLLM_SERVER_DEV_MODE=1 is off: target {slurm_target_name}'s "
            )
            and "0.0% of 2,048 prompt tokens were found in it; fresh prompts (seed " in check.said
        )
    print(f"slurm parallel 2: wall {result.wall_s}s; cells {a.wall_s}s and {b.wall_s}s; jobs {jobs} on {sorted(gpus)}")
    assert cells_of(fake.campaigns / "c1").server_files() == []
    assert slurm_cluster.jobs(slurm_target_name) == [] and wait_until_gone(tmp_path) == []


@pytest.mark.parametrize("allocation", ["per_boot", "held"])
async def test_a_campaign_dry_run_shows_each_cells_whole_script_and_submits_nothing(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path, allocation: str
) -> None:
    fake = make_fake(tmp_path)
    path = fake.write(target=slurm_target_name, base={"max_model_len": 4096, "port": 8000})
    spec = slurm_cluster.spec(tmp_path / "work", env=fake.engine_env, allocation=allocation)
    before = slurm_cluster.jobs()
    async with SlurmTarget(slurm_target_name, spec) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=False, dry_run=True)
    assert result.dry_run and result.plan is not None and result.ran == []
    for cell, tokens in zip(result.plan.cells, (2048, 8192), strict=True):
        assert cell.submits is not None
        lines = cell.submits.splitlines()
        assert "#SBATCH --job-name=rt-c1-" in cell.submits and "#SBATCH --gres=gpu:1" in lines
        engine_line = [line for line in lines if ">>" in line and "boot.log" in line]  # the engine, its log
        assert len(engine_line) == 1 and f"--max-num-batched-tokens {tokens}" in engine_line[0]
        if allocation == "held":
            assert "#SBATCH --job-name=rt-c1-hold" in lines and any(
                line.startswith("srun --jobid=<allocation>") for line in lines
            )
    assert slurm_cluster.jobs() == before and not (tmp_path / "work").exists()
