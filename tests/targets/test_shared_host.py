"""Issue 32, item 4: the shared host. A target's work folder holds its run folders (each server's pid, start time,
exclusive mark, exit code, the resident bench client's requests and answers), so it is the caller's alone: the local,
SSH and Slurm targets' default is per user (the local one under $XDG_RUNTIME_DIR where that is private, else
redline-<uid> in the temporary folder), made 0700 at the first start; a work folder another user owns, that others
may write, or that is a link is refused before anything starts, so a run folder planted there can neither make the
target busy nor be swapped under a run. Real processes on this host (the SSH target runs the same launch script).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from redline.errors import TargetBusy, TargetError
from redline.targets import LocalTarget
from redline.targets.local import default_workdir
from redline.targets.slurm_cli import SlurmCli
from redline.targets.slurm_spec import SlurmSpec
from redline.targets.ssh import SSHSpec
from tests.conftest import processes_naming

pytestmark = pytest.mark.anyio
SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_shared_host_default_work_folders_are_each_users_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert default_workdir() == tmp_path / f"redline-{os.geteuid()}"
    runtime = tmp_path / "run-user"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert default_workdir() == runtime / "redline"
    runtime.chmod(0o755)  # not a runtime folder only its user may use: the temporary folder's own
    assert default_workdir() == tmp_path / f"redline-{os.geteuid()}"
    assert SSHSpec(kind="ssh", host="gpu1", user="ana").workdir == "/tmp/redline-ana"
    assert SlurmSpec(kind="slurm", partition="gpu", login={"kind": "ssh", "host": "l", "user": "ana"}).workdir == (
        "/tmp/redline-slurm-ana"
    )
    assert SlurmSpec(kind="slurm", partition="gpu", workdir="/shared/redline").workdir == "/shared/redline"


async def test_shared_host_a_new_work_folder_is_made_0700(tmp_path: Path) -> None:
    work = tmp_path / "deep" / "work"
    async with LocalTarget("local", workdir=str(work)) as target:
        handle = await target.start(SLEEP, env={}, cwd=None, log_path="s.log")
        await target.stop(handle, grace_s=0)
    for folder in (work, work / "runs"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def _open_to_all(work: Path) -> None:
    work.mkdir()
    work.chmod(0o777)


def _group_writable_runs(work: Path) -> None:
    (work / "runs").mkdir(parents=True)
    work.chmod(0o700)
    (work / "runs").chmod(0o770)


def _runs_a_link(work: Path) -> None:
    work.mkdir(mode=0o700)
    (work.parent / "elsewhere").mkdir(mode=0o700)
    (work / "runs").symlink_to(work.parent / "elsewhere")


def _another_users(work: Path) -> None:
    work.mkdir(mode=0o700)
    os.chown(work, 65534, 65534)


PLANTS = {"open to all": _open_to_all, "group-writable runs": _group_writable_runs, "runs a link": _runs_a_link}
if os.geteuid() == 0:  # only root can make a folder another user's
    PLANTS["another user's"] = _another_users


@pytest.mark.parametrize("plant", sorted(PLANTS))
async def test_shared_host_a_work_folder_not_the_callers_alone_is_refused_and_its_planted_run_ignored(
    tmp_path: Path, plant: str
) -> None:
    """Another user's planted run folder (a live process's pid, its start time, the exclusive mark) would make the
    target busy; the folder it is in is refused before the busy check reads it, and nothing starts."""
    work = tmp_path / "work"
    PLANTS[plant](work)
    planted = (work / "runs").resolve() / "20260101T000000Z-00000000"
    planted.mkdir(parents=True, exist_ok=True)
    neighbour = subprocess.Popen(SLEEP)
    try:
        ticks = Path(f"/proc/{neighbour.pid}/stat").read_text().rpartition(")")[2].split()[19]
        for name, text in (("pid", str(neighbour.pid)), ("ticks", ticks), ("exclusive", "")):
            (planted / name).write_text(text)
        async with LocalTarget("local", workdir=str(work)) as target:
            with pytest.raises(TargetError) as refused:
                await target.start(SLEEP, env={}, cwd=None, log_path="s.log", exclusive=True)
    finally:
        neighbour.kill()
        neighbour.wait()
    assert not isinstance(refused.value, TargetBusy)
    message = str(refused.value)
    assert message.startswith("the work folder of target local is not yours alone (") and "\n" not in message
    assert "name a workdir of your own" in message
    assert processes_naming(tmp_path) == [] and sorted(p.name for p in planted.parent.iterdir()) == [planted.name]


async def test_shared_host_a_slurm_work_folder_is_checked_before_a_script_is_written_there(tmp_path: Path) -> None:
    """The Slurm target writes its batch scripts into its work folder on the login host, where sbatch reads them: one
    others may write is refused before a script is written (else another user could swap it before it runs)."""
    for mode, ok in ((0o777, False), (0o755, True)):
        work = tmp_path / f"shared-{mode:o}"
        work.mkdir()
        work.chmod(mode)
        cli = SlurmCli(SlurmSpec(kind="slurm", partition="gpu", workdir=str(work)), LocalTarget("login"))
        script = work / "runs" / "20260101T000000Z-00000000" / "job.sbatch"
        if ok:
            await cli.write(str(script), "#!/bin/bash\n")
            assert script.read_text() == "#!/bin/bash\n" and (work / "runs").stat().st_mode & 0o777 == 0o700
            continue
        with pytest.raises(TargetError, match=r"^the work folder of target login is not yours alone \("):
            await cli.write(str(script), "#!/bin/bash\n")
        assert list(work.iterdir()) == []
