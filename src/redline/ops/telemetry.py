"""GPU telemetry beside a bench (the I/O; policy/telemetry.py judges it): nvidia-smi sampling every GPU on the
server's host while the bench runs, into a file beside the bench's result, and the GPU's processes when it starts.

    sampler = GpuSampler(target)
    sampling = await sampler.start(handle, "bench-c16.json", deadline_s)   # nothing on a host without nvidia-smi
    ... the bench ...
    telemetry, samples, why = await sampler.stop(handle, sampling)

The sampler runs on the server's host (in its pod or job where the target runs servers so), detached, bounded by
`timeout` at the bench's deadline, so a redline killed mid-bench leaves none running past it. A host without
nvidia-smi is asked once per sampler.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from redline.errors import CommandTimeout, TargetPathError
from redline.models.telemetry import GpuTelemetry
from redline.policy import telemetry as policy
from redline.targets import ServerHandle, Target
from redline.targets.base import PosixLocator

NO_TOOL = 3
START = (
    f"command -v nvidia-smi >/dev/null 2>&1 || exit {NO_TOOL}\n"
    f'nvidia-smi --query-compute-apps={",".join(policy.APPS_QUERY)} --format=csv,noheader,nounits > "$1.apps" '
    "2>/dev/null\n"
    f'timeout "$2" nvidia-smi --query-gpu={",".join(policy.QUERY)} --format=csv,noheader,nounits -lms "$3" '
    '-f "$1" >/dev/null 2>&1 &\n'
    'echo $! > "$1.pid"\n'
)
# The sampler stopped and gone (its last row written, 2 s at most), then the host's processes by group.
STOP = (
    'p=$(cat "$1.pid"); kill "$p" 2>/dev/null; i=0\n'
    'while kill -0 "$p" 2>/dev/null && [ "$i" -lt 40 ]; do sleep 0.05; i=$((i + 1)); done\n'
    "ps -e -o pid=,pgid= 2>/dev/null; exit 0\n"
)


@dataclass(frozen=True)
class Sampling:
    """A sampler started beside one bench (path: its samples file), or why none was."""

    path: str | None
    why: str = ""


def samples_name(result_name: str) -> str:
    """The samples file beside a bench's result: bench-c16.json -> bench-c16.gpu.csv."""
    stem = result_name[: -len(".json")] if result_name.endswith(".json") else result_name
    return f"{stem}.gpu.csv"


class GpuSampler:
    """Samples the GPUs of a target's servers beside their benches."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.absent: str | None = None  # why this target has no telemetry, once known

    async def start(self, handle: ServerHandle, result_name: str, deadline_s: float) -> Sampling:
        if self.absent is not None:
            return Sampling(None, self.absent)
        path = posixpath.join(handle.run_dir, samples_name(result_name))
        argv = ["sh", "-c", START, "sh", path, str(int(deadline_s) + 30), str(policy.INTERVAL_MS)]
        try:
            run = await self.target.run(argv, timeout_s=30, server=handle)
        except CommandTimeout:
            return Sampling(None, "the sampler did not start within 30 s")
        if run.returncode == NO_TOOL:
            self.absent = f"nvidia-smi is not on target {self.target.name}"
            return Sampling(None, self.absent)
        if run.returncode != 0:
            return Sampling(None, f"the sampler did not start (exit {run.returncode}: {run.stderr.strip()[:200]})")
        return Sampling(path)

    async def stop(self, handle: ServerHandle, sampling: Sampling) -> tuple[GpuTelemetry | None, str, str]:
        """The bench's telemetry (None: none), the samples as the tool wrote them, and why there are none."""
        if sampling.path is None:
            return None, "", sampling.why
        try:
            listed = await self.target.run(["sh", "-c", STOP, "sh", sampling.path], timeout_s=30, server=handle)
            samples = await self.target.read_text(sampling.path)
            apps = await self.target.read_text(sampling.path + ".apps")
        except (CommandTimeout, TargetPathError) as exc:
            return None, "", f"the samples could not be read ({exc})"
        group = handle.locator.pgid if isinstance(handle.locator, PosixLocator) else None
        others = policy.others_of(apps, policy.process_groups(listed.stdout), group)
        name = posixpath.basename(sampling.path)
        found = policy.summarise(samples, policy.INTERVAL_MS, name, others)
        return found, samples, "" if found is not None else "the sampler wrote no sample it could read"


__all__ = ["GpuSampler", "Sampling", "samples_name"]
