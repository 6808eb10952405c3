"""GPU telemetry beside a bench (the I/O; policy/telemetry.py judges it): nvidia-smi sampling every GPU on the
server's host while the bench runs, into a file beside the bench's result, and the GPU's processes when it starts.

    sampler = GpuSampler(target)
    sampling = await sampler.start(handle, "bench-c16.json", deadline_s)   # nothing on a host without nvidia-smi
    ... the bench ...
    telemetry, kept, why = await sampler.stop(handle, sampling)          # kept: each samples file's name and text

The sampler runs on the server's host (in its pod or job where the target runs servers so), detached, bounded by
`timeout` at the bench's deadline, so a redline killed mid-bench leaves none running past it. A host without
nvidia-smi is asked once per sampler. Where the host also has dcgmi, DCGM's profiling fields (SM active, DRAM
active: policy/dcgm.py) are sampled beside it at the same interval, into a second file.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from redline.errors import CommandTimeout, InputError, TargetPathError
from redline.models.telemetry import GpuTelemetry
from redline.policy import dcgm
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
    "command -v dcgmi >/dev/null 2>&1 || exit 0\n"
    f'timeout "$2" dcgmi dmon -e {",".join(map(str, dcgm.FIELDS))} -d "$3" > "$4" 2>&1 &\n'
    'echo $! >> "$1.pid"\n'
)
# The samplers stopped and gone (their last rows written, 2 s at most), then the host's processes by group.
STOP = (
    'ps=$(cat "$1.pid"); kill $ps 2>/dev/null\n'
    'for p in $ps; do i=0; while kill -0 "$p" 2>/dev/null && [ "$i" -lt 40 ]; do sleep 0.05; i=$((i + 1)); done; done\n'
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


def _dcgm_path(samples_path: str) -> str:
    return posixpath.join(posixpath.dirname(samples_path), dcgm.file_of(posixpath.basename(samples_path)))


class GpuSampler:
    """Samples the GPUs of a target's servers beside their benches."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.absent: str | None = None  # why this target has no telemetry, once known

    async def start(self, handle: ServerHandle, result_name: str, deadline_s: float) -> Sampling:
        if self.absent is not None:
            return Sampling(None, self.absent)
        path = posixpath.join(handle.run_dir, samples_name(result_name))
        deadline = str(int(deadline_s) + 30)
        argv = ["sh", "-c", START, "sh", path, deadline, str(policy.INTERVAL_MS), _dcgm_path(path)]
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

    async def stop(self, handle: ServerHandle, sampling: Sampling) -> tuple[GpuTelemetry | None, dict[str, str], str]:
        """The bench's telemetry (None: none), the samples as each tool wrote them (by file name, to keep beside the
        bench's result), and why there are none."""
        if sampling.path is None:
            return None, {}, sampling.why
        try:
            listed = await self.target.run(["sh", "-c", STOP, "sh", sampling.path], timeout_s=30, server=handle)
            samples = await self.target.read_text(sampling.path)
            apps = await self.target.read_text(sampling.path + ".apps")
        except (CommandTimeout, TargetPathError) as exc:
            return None, {}, f"the samples could not be read ({exc})"
        group = handle.locator.pgid if isinstance(handle.locator, PosixLocator) else None
        others = policy.others_of(apps, policy.process_groups(listed.stdout), group)
        name = posixpath.basename(sampling.path)
        profiled = await self._dcgm_text(_dcgm_path(sampling.path))
        try:  # the tools' output is untrusted: a row neither writes is refused, and the bench goes on without it
            found = dcgm.with_dcgm(
                policy.summarise(samples, policy.INTERVAL_MS, name, others), profiled, dcgm.file_of(name)
            )
        except InputError as exc:
            return None, {}, str(exc)
        if found is None:
            return None, {}, "the sampler wrote no sample it could read"
        kept = {name: samples} | ({found.dcgm_file: profiled} if found.dcgm_file else {})
        return found, kept, ""

    async def _dcgm_text(self, path: str) -> str:
        """DCGM's samples beside the bench; empty where the host has no dcgmi (no file) or they cannot be read."""
        try:
            return await self.target.read_text(path)
        except (CommandTimeout, TargetPathError):
            return ""


__all__ = ["GpuSampler", "Sampling", "samples_name"]
