"""Local only: GPU handling through a stand-in nvidia-smi on PATH, and /proc parsing."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import anyio
import pytest

from redline.errors import TargetError
from redline.targets import GpuInfo, LocalTarget
from redline.targets.posix_scripts import parse_gpus, parse_stats
from tests.conftest import pid_running

from .conftest import PY, machine_id

pytestmark = pytest.mark.anyio

SLEEP = [PY, "-c", "import time; time.sleep(600)"]


@pytest.fixture
def gpu_pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in nvidia-smi first on PATH; it lists the compute pids written to the returned file."""
    listed = tmp_path / "gpu_pids"
    listed.write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(
        '#!/bin/sh\ncase "$1" in\n'
        f"  --query-compute-apps=pid) cat {listed} ;;\n"
        "  --query-gpu=name,memory.total,uuid)\n"
        "    printf 'NVIDIA H200, 143771, GPU-a1\\nNVIDIA H200, 143771, GPU-b2\\n' ;;\n"
        "  *) exit 2 ;;\nesac\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return listed


async def test_host_info_reads_gpus_from_nvidia_smi(gpu_pids: Path, tmp_path: Path) -> None:
    info = await LocalTarget(workdir=str(tmp_path)).host_info()
    assert info.gpus == [
        GpuInfo(name="NVIDIA H200", memory_mib=143771, uuid="GPU-a1"),
        GpuInfo(name="NVIDIA H200", memory_mib=143771, uuid="GPU-b2"),
    ]


async def test_host_info_reads_what_the_driver_reserves_where_nvidia_smi_says(gpu_pids: Path, tmp_path: Path) -> None:
    """nvidia-smi's memory.reserved (the H100 80GB's 480 MiB): the memory model's device total for a GPU no boot
    ran on; an nvidia-smi without the field (the fake above exits 2 for it) leaves it unknown."""
    fake = gpu_pids.parent / "bin" / "nvidia-smi"
    fake.write_text(
        fake.read_text().replace("  *) exit 2", "  --query-gpu=memory.reserved) printf '480\\n480\\n' ;;\n  *) exit 2")
    )
    info = await LocalTarget(workdir=str(tmp_path)).host_info()
    assert [g.reserved_mib for g in info.gpus] == [480, 480]


async def test_host_info_names_this_node(gpu_pids: Path, tmp_path: Path) -> None:
    info = await LocalTarget(workdir=str(tmp_path)).host_info()
    assert info.hostname == socket.gethostname()
    assert info.machine_id == machine_id()  # None only where /etc/machine-id is missing or empty
    if Path("/etc/machine-id").is_file() and machine_id():
        assert info.machine_id and len(info.machine_id) == 32


async def test_stop_waits_until_the_gpu_lets_go(gpu_pids: Path, tmp_path: Path) -> None:
    target = LocalTarget(workdir=str(tmp_path))
    handle = await target.start(SLEEP, env={}, cwd=None, log_path="l")
    gpu_pids.write_text(f"{handle.locator.pid}\n99999999\n")

    async def driver_frees_memory() -> None:
        await anyio.sleep(0.6)
        gpu_pids.write_text("99999999\n")  # another tenant's process stays: not ours to wait for

    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(driver_frees_memory)
        await target.stop(handle, grace_s=5)
    assert time.monotonic() - t0 >= 0.6
    assert not pid_running(handle.locator.pid)


async def test_stop_raises_when_the_gpu_stays_held(gpu_pids: Path, tmp_path: Path) -> None:
    target = LocalTarget(workdir=str(tmp_path))
    target.gpu_release_s = 0.5
    handle = await target.start(SLEEP, env={}, cwd=None, log_path="l")
    gpu_pids.write_text(f"{handle.locator.pid}\n")
    with pytest.raises(TargetError, match=f"pids \\[{handle.locator.pid}\\] still hold GPU memory"):
        await target.stop(handle, grace_s=5)
    assert not pid_running(handle.locator.pid)  # the processes are gone; only the driver lags


def test_parse_stats_survives_spaces_and_parens_in_the_name() -> None:
    line = "4242 (VLLM::Engine) core) S 1 4240 4240 0 -1 4194560 " + " ".join(["0"] * 12) + " 987654 0 0\n"
    (stat,) = parse_stats(line + "garbage without fields\n")
    assert (stat.pid, stat.state, stat.pgid, stat.start_ticks) == (4242, "S", 4240, 987654)


def test_parse_gpus_reads_both_forms_and_refuses_what_it_cannot_read() -> None:
    assert parse_gpus("NVIDIA A100-SXM4-80GB, 81920\n\n") == [GpuInfo(name="NVIDIA A100-SXM4-80GB", memory_mib=81920)]
    assert parse_gpus("NVIDIA H200, 143771, GPU-5f3c\nOdd, Name, 80, [N/A]\n") == [
        GpuInfo(name="NVIDIA H200", memory_mib=143771, uuid="GPU-5f3c"),
        GpuInfo(name="Odd, Name", memory_mib=80, uuid=None),
    ]
    assert parse_gpus("Odd, Name, 80\n") == [GpuInfo(name="Odd, Name", memory_mib=80)]
    for bad in ("NVIDIA H200, [N/A]\n", "NVIDIA H200, [N/A], GPU-5f3c\n", "no columns\n"):
        with pytest.raises(TargetError, match="cannot read nvidia-smi GPU line"):
            parse_gpus(bad)
