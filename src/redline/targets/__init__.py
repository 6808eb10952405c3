"""Where commands run: one narrow interface (`Target`), one module per kind.

load_targets("targets.yml") -> {name: spec}     the targets file, checked
open_target(name, specs)    -> Target           the kind the spec names (kinds.py)
async with target:                              close() on exit
    handle = await target.start(argv, env=..., cwd=..., log_path="server.log")
    outcome = await target.wait_ready(handle, "http://127.0.0.1:8000/health", 1800)
    await target.stop(handle)                   the server the handle names, and only it

A ServerHandle names its server by a locator of its kind's own (PosixLocator:
a process group), so a kind without pids never has to fake one.
"""

from redline.targets.base import (
    GpuInfo,
    HostInfo,
    Launch,
    Locator,
    PosixLocator,
    RunResult,
    ServerHandle,
    Target,
    WaitOutcome,
)
from redline.targets.config import TargetSpec, load_targets, open_target
from redline.targets.kinds import KINDS
from redline.targets.local import LocalSpec, LocalTarget
from redline.targets.posix import PosixTarget
from redline.targets.spec import BaseSpec
from redline.targets.ssh import SSHSpec, SSHTarget

__all__ = [
    "KINDS",
    "BaseSpec",
    "GpuInfo",
    "HostInfo",
    "Launch",
    "LocalSpec",
    "LocalTarget",
    "Locator",
    "PosixLocator",
    "PosixTarget",
    "RunResult",
    "SSHSpec",
    "SSHTarget",
    "ServerHandle",
    "Target",
    "TargetSpec",
    "WaitOutcome",
    "load_targets",
    "open_target",
]
