"""Where commands run: one interface (`Target`), one module per kind.

load_targets("targets.yml") -> {name: spec}     the targets file, checked
open_target(name, specs)    -> Target           LocalTarget or SSHTarget
async with target:                              close() on exit
    handle = await target.start(argv, env=..., cwd=..., log_path="server.log")
    outcome = await target.wait_ready(handle, "http://127.0.0.1:8000/health", 1800)
    await target.stop(handle)                   the handle's process group, and only it
"""

from redline.targets.base import (
    GpuInfo,
    HostInfo,
    ProcessHandle,
    RunResult,
    Target,
    WaitOutcome,
)
from redline.targets.config import (
    LocalSpec,
    SSHSpec,
    TargetSpec,
    load_targets,
    open_target,
)
from redline.targets.local import LocalTarget
from redline.targets.ssh import SSHTarget

__all__ = [
    "GpuInfo",
    "HostInfo",
    "LocalSpec",
    "LocalTarget",
    "ProcessHandle",
    "RunResult",
    "SSHSpec",
    "SSHTarget",
    "Target",
    "TargetSpec",
    "WaitOutcome",
    "load_targets",
    "open_target",
]
