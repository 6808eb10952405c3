"""Issue 38, item 10: a target whose work folder is deep, its engine's temporary folder under it (as the CPU build's
env puts it: TMPDIR=<folder>/tmp), fails to start on its ZeroMQ socket's path (past a Unix socket's 107 characters);
the boot is crash_env, named as such with the fix, never crash_unknown. The fake engine binds as vLLM does."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.models import BootStatus, ServeConfig
from redline.ops.session import ServeSession
from redline.targets import LocalTarget
from tests.server.helpers import FAKE_VLLM, LLAMA8B, free_port

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("deep", [True, False], ids=["tmpdir-under-a-deep-folder", "tmpdir-short-as-the-fix-says"])
async def test_deep_workdir_a_socket_path_past_107_characters_is_crash_env_with_the_fix(
    tmp_path: Path, deep: bool
) -> None:
    work = tmp_path / ("w" * 60)
    (work / "tmp").mkdir(parents=True)
    tmpdir = str(work / "tmp") if deep else tempfile.gettempdir()
    env = {"FAKE_VLLM_BOOT_S": "0.1", "TMPDIR": tmpdir}
    fake = [sys.executable, str(FAKE_VLLM)]
    target = LocalTarget("local", workdir=str(work / "target"), engine_command=fake, engine_env=env)
    session = ServeSession(target, get_engine("vllm"))
    config = ServeConfig(model=str(LLAMA8B), max_model_len=4096, port=free_port())
    async with target:
        boot = await session.boot(config, 60)
        if boot.ready:
            await session.stop(boot.handle)
    if not deep:  # the fix: the same deep work folder, a short temporary folder
        assert boot.signals.status is BootStatus.BOOT_OK, boot.signals.reason
        return
    assert len(tmpdir) + 37 > 107
    assert boot.signals.status is BootStatus.CRASH_ENV, boot.signals.reason
    assert f'ipc path "{str(work)[:100]}' in boot.signals.reason
    assert "is longer than 107 characters, a Unix socket's limit" in boot.signals.reason
    assert "set TMPDIR in the target's env to a folder of at most 70 characters" in boot.signals.reason
