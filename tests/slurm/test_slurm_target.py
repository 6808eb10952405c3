"""The `slurm` target on a real cluster (scripts/slurm-cluster up), with the fake engine (tests/server/fake_vllm.py)
as the server: real sbatch, squeue, srun, scancel, sacct and scontrol, real jobs on two nodes with fake GPUs.

The real vLLM boot is in test_slurm_vllm.py; a ladder in one allocation in test_slurm_held.py; a parallel
campaign in test_slurm_campaign.py.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from redline.errors import TargetBusy, TargetError
from redline.targets import Launch
from redline.targets.base import ServerHandle, SlurmLocator
from redline.targets.slurm import SlurmTarget
from tests.conftest import processes_naming
from tests.server.helpers import FAKE_VLLM, LLAMA8B
from tests.slurm.conftest import SlurmCluster

pytestmark = pytest.mark.anyio

PORT = 8000  # every node has an address of its own: every test's server may listen on it


def serve_argv(model: Path = LLAMA8B, port: int = PORT) -> list[str]:
    return [sys.executable, str(FAKE_VLLM), "serve", str(model), "--port", str(port), "--max-model-len", "4096"]


def model_in(folder: Path) -> Path:
    """The fake engine's model, copied into folder: every process that serves it names folder."""
    model = folder / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    return model


HEALTH = f"http://127.0.0.1:{PORT}/health"


async def test_a_server_is_a_job_recorded_before_it_runs_reached_on_its_node_and_cancelled_leaving_nothing(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    target = SlurmTarget(slurm_target_name, slurm_cluster.spec(tmp_path / "work"))
    target.experiment = "smoke"
    async with target:
        argv = serve_argv(model_in(tmp_path))
        handle = await target.start(argv, env={"QUOTED": "it's $(not) run"}, cwd=None, log_path="boot.log")
        loc = handle.locator
        assert isinstance(loc, SlurmLocator) and loc.step is None
        run_dir = Path(handle.run_dir)
        assert (run_dir / "job").read_text() == f"{loc.job_id}\n"  # written before the job was released
        assert (run_dir / "job.sbatch").read_text().startswith("#!/bin/bash\n")
        [job] = slurm_cluster.jobs(slurm_target_name)
        assert job["name"] == f"rt-smoke-{run_dir.name}" == loc.name
        assert job["comment"] == f"redline:target={slurm_target_name},experiment=smoke,role=server,run={run_dir.name}"

        outcome = await target.wait_ready(handle, HEALTH, 60)
        assert outcome.status == "ready", (outcome, (run_dir / "boot.log").read_text()[-2000:])
        node = (run_dir / "node").read_text().strip()
        assert node in slurm_cluster.nodes and (await target.host_info()).hostname == node
        ran = await target.run(["sh", "-c", 'echo "$(hostname) $QUOTED"'], env={"QUOTED": "a 'b'"}, server=handle)
        assert ran.stdout == f"{node} a 'b'\n"  # a step in the job, on its node
        assert "Application startup complete" in await target.read_text(handle.log_path)
        assert processes_naming(tmp_path)  # the engine runs

        t0 = time.monotonic()
        await target.stop(handle)
        print(f"slurm: a server job cancelled and gone in {time.monotonic() - t0:.1f}s")
        assert not await target.is_alive(handle)
    assert slurm_cluster.jobs(slurm_target_name) == []
    assert processes_naming(tmp_path) == []  # proctrack/cgroup: no process of the job is left
    end = await target.cli.ended(loc.job_id)
    assert end is not None and end.ended and not end.succeeded, end


async def test_how_a_job_ended_is_read_from_sacct_or_scontrol_and_its_exit_code_reported(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    target = SlurmTarget(slurm_target_name, slurm_cluster.spec(tmp_path / "work", gpus=0))
    async with target:
        failing = await target.start(["sh", "-c", "echo dying; exit 3"], env={}, cwd=None, log_path="boot.log")
        outcome = await target.wait_ready(failing, HEALTH, 60)
        assert (outcome.status, outcome.exit_code) == ("exited", 3), outcome
        ok = await target.start(["true"], env={}, cwd=None, log_path="boot.log")
        assert (await target.wait_ready(ok, HEALTH, 60)).exit_code == 0
        await target.stop(failing)  # gone already: nothing to cancel
        assert isinstance(failing.locator, SlurmLocator) and isinstance(ok.locator, SlurmLocator)
        failed, done = [await target.cli.ended(loc.job_id) for loc in (failing.locator, ok.locator)]
    assert failed is not None and (failed.state, failed.exit_code, failed.succeeded) == ("FAILED", "3:0", False)
    assert done is not None and (done.state, done.exit_code, done.succeeded) == ("COMPLETED", "0:0", True)
    assert (Path(failing.log_path)).read_text() == "dying\n"


async def test_dry_run_previews_the_whole_script_and_submits_nothing(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    spec = slurm_cluster.spec(tmp_path / "work", account=None, cpus_per_task=1, time_limit="00:20:00")
    target = SlurmTarget(slurm_target_name, spec)
    target.dry_run = True
    before = slurm_cluster.jobs()
    async with target:
        text = await target.submission_preview(serve_argv(), env={"HF_HOME": "/a b"})
    assert text is not None and text.startswith("sbatch --parsable --hold ")
    for line in (
        "#SBATCH --gres=gpu:1",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --time=00:20:00",
        "export HF_HOME='/a b'",
    ):
        assert line in text.splitlines(), text
    assert slurm_cluster.jobs() == before
    assert not (tmp_path / "work").exists()  # not even a folder


async def test_the_preflight_refuses_with_the_node_table_when_no_gpu_is_free(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    gpus = f"--gres=gpu:{slurm_cluster.gpus_per_node}"
    holders = [slurm_cluster.sbatch(gpus, f"--nodelist={n}", "-J", "test-holder") for n in slurm_cluster.nodes]
    try:
        for job in holders:
            slurm_cluster.wait_running(job)
        target = SlurmTarget(slurm_target_name, slurm_cluster.spec(tmp_path / "work"))
        async with target:
            with pytest.raises(TargetError) as refused:
                await target.start(serve_argv(), env={}, cwd=None, log_path="boot.log")
            with pytest.raises(TargetError):  # a dry run is refused alike
                await target.submission_preview(serve_argv(), env={})
    finally:
        slurm_cluster.cancel(*holders)
    text = str(refused.value)
    assert "no node has room now for a job asking 1 GPU(s)" in text and "so none was submitted" in text
    for node in slurm_cluster.nodes:
        assert any(line.startswith(node) and line.rstrip().endswith("0 GPU(s) free") for line in text.splitlines())
    assert slurm_cluster.jobs(slurm_target_name) == []


async def test_a_job_pending_past_its_deadline_is_cancelled_with_the_reason_slurm_gives(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    # the short partition allows one minute: a job asking ten stays PENDING (PartitionTimeLimit) for good
    spec = slurm_cluster.spec(
        tmp_path / "work", partition=slurm_cluster.short_partition, time_limit="10", pending_deadline_s=2
    )
    async with SlurmTarget(slurm_target_name, spec) as target:
        handle = await target.start(serve_argv(), env={}, cwd=None, log_path="boot.log")
        with pytest.raises(TargetError) as cancelled:
            await target.wait_ready(handle, HEALTH, 60)
    text = str(cancelled.value)
    assert "was still PENDING" in text and "Slurm's reason: PartitionTimeLimit" in text and "lower time_limit" in text
    assert text.endswith("it was cancelled")
    assert slurm_cluster.jobs(slurm_target_name) == []


async def test_stop_and_teardown_never_touch_a_job_redline_did_not_submit(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    other = slurm_cluster.sbatch("--gres=gpu:1", "-J", f"rt-x-{'20260101T000000Z-0badf00d'}")
    try:
        slurm_cluster.wait_running(other)
        target = SlurmTarget(slurm_target_name, slurm_cluster.spec(tmp_path / "work"))
        forged = ServerHandle(
            target=slurm_target_name,
            run_dir=str(tmp_path / "work" / "runs" / "20260101T000000Z-0badf00d"),
            log_path="boot.log",
            started_at="2026-01-01T00:00:00+00:00",
            locator=SlurmLocator(
                job_id=other, name="rt-x-20260101T000000Z-0badf00d", run_id="20260101T000000Z-0badf00d"
            ),
        )
        async with target:
            with pytest.raises(TargetError, match="is not the job redline submitted .* left alone"):
                await target.stop(forged)
            assert await target.teardown() == []
        assert [j["state"] for j in slurm_cluster.jobs() if j["id"] == other] == ["RUNNING"]
    finally:
        slurm_cluster.cancel(other)


async def test_an_exclusive_server_makes_the_target_busy_and_a_launch_is_found_again_by_its_run_folder(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path: Path
) -> None:
    async with SlurmTarget(slurm_target_name, slurm_cluster.spec(tmp_path / "work")) as target:
        run_dir = target.new_run_dir()
        handle = await target.start(
            serve_argv(), env={}, cwd=None, log_path="boot.log", exclusive=True, run_dir=run_dir
        )
        try:
            with pytest.raises(TargetBusy, match=f"job {handle.locator.job_id}"):  # type: ignore[union-attr]
                await target.start(serve_argv(), env={}, cwd=None, log_path="boot.log", exclusive=True)
            found = await target.launched(
                Launch(target=slurm_target_name, run_dir=run_dir, log_path=handle.log_path, at="x")
            )
            assert found is not None and found.locator == handle.locator
            (Path(run_dir) / "job").unlink()  # a launch killed before it wrote the id: found by the job's name
            again = await target.launched(Launch(target=slurm_target_name, run_dir=run_dir, log_path="", at="x"))
            assert again is not None and again.locator == handle.locator
        finally:
            assert await target.teardown() == [handle.locator.name]  # type: ignore[union-attr]
        nothing = await target.launched(
            Launch(target=slurm_target_name, run_dir=target.new_run_dir(), log_path="", at="x")
        )
        assert nothing is None
