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
from redline.models.telemetry import GpuTelemetry, HealthRecord
from redline.policy import dcgm, gpu_health
from redline.policy import telemetry as policy
from redline.targets import ServerHandle, Target
from redline.targets.base import PosixLocator

NO_TOOL = 3
FIRST_ROW_S = 10
START = (
    f"command -v nvidia-smi >/dev/null 2>&1 || exit {NO_TOOL}\n"
    f'nvidia-smi --query-compute-apps={",".join(policy.APPS_QUERY)} --format=csv,noheader,nounits > "$1.apps" '
    "2>/dev/null\n"
    f'timeout "$2" nvidia-smi --query-gpu={",".join(policy.QUERY)} --format=csv,noheader,nounits -lms "$3" '
    '-f "$1" >/dev/null 2>&1 &\n'
    'S=$!; echo $S > "$1.pid"; D=\n'
    "if command -v dcgmi >/dev/null 2>&1; then\n"
    f'  timeout "$2" dcgmi dmon -e {",".join(map(str, dcgm.FIELDS))} -d "$3" > "$4" 2>&1 &\n'
    '  D=$!; echo $D >> "$1.pid"\n'
    "fi\n"
    # GPU health (policy/gpu_health.py): a row before the bench, one every HEALTH_MS while it runs (the clock event
    # reasons under their new name, else their old one), the kernel log's XID count where the host lets it be read
    'H="$1.health"\n'
    f"for q in {' '.join(gpu_health.query(r) for r in gpu_health.REASONS)}; do\n"
    '  nvidia-smi --query-gpu="$q" --format=csv,noheader,nounits > "$H.before" 2>/dev/null && '
    '{ echo "$q" > "$H.query"; break; }\n'
    "done\n"
    'if [ -f "$H.query" ]; then\n'
    '  timeout "$2" nvidia-smi --query-gpu="$(cat "$H.query")" --format=csv,noheader,nounits '
    f'-lms {gpu_health.HEALTH_MS} -f "$H" >/dev/null 2>&1 &\n'
    '  echo $! >> "$1.pid"\n'
    "fi\n"
    "x=$(dmesg 2>/dev/null) && printf '%s\\n' \"$x\" | grep -c 'NVRM: Xid' > \"$1.xid\"\n"
    # the bench starts once each sampler wrote its first row or ended (FIRST_ROW_S at most): a tool slow to start on a
    # busy host would otherwise miss a short bench whole
    f"end=$(($(date +%s) + {FIRST_ROW_S}))\n"
    'while [ "$(date +%s)" -lt "$end" ]; do\n'
    '  { [ -s "$1" ] || ! kill -0 $S 2>/dev/null; } && '
    '{ [ -z "$D" ] || grep -q "^GPU" "$4" 2>/dev/null || ! kill -0 $D 2>/dev/null; } && break\n'
    "  sleep 0.05\n"
    "done\n"
    "exit 0\n"
)
# The samplers stopped and gone (their last rows written, 2 s at most), the health row after the bench and the XIDs
# logged since it started, then the host's processes by group.
STOP = (
    'ps=$(cat "$1.pid"); kill $ps 2>/dev/null\n'
    'for p in $ps; do i=0; while kill -0 "$p" 2>/dev/null && [ "$i" -lt 40 ]; do sleep 0.05; i=$((i + 1)); done; done\n'
    'H="$1.health"\n'
    'if [ -f "$H.query" ]; then\n'
    '  nvidia-smi --query-gpu="$(cat "$H.query")" --format=csv,noheader,nounits > "$H.after" 2>/dev/null\n'
    '  cat "$H.before" "$H" "$H.after" > "$H.all" 2>/dev/null\n'
    "fi\n"
    'if [ -f "$1.xid" ]; then\n'
    '  n=$(cat "$1.xid"); x=$(dmesg 2>/dev/null) && '
    "printf '%s\\n' \"$x\" | grep 'NVRM: Xid' | tail -n +$((n + 1)) | head -n 20 > \"$1.xid.new\"\n"
    "fi\n"
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


def health_name(samples: str) -> str:
    """The health rows beside a bench's samples: bench-c16.gpu.csv -> bench-c16.health.csv."""
    return f"{samples.removesuffix('.gpu.csv')}.health.csv"


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
            apps = await self.target.read_text(sampling.path + ".apps")
        except (CommandTimeout, TargetPathError) as exc:
            return None, {}, f"the samples could not be read ({exc})"
        samples = await self._text(sampling.path) or ""  # none where the sampler was stopped before its first row
        group = handle.locator.pgid if isinstance(handle.locator, PosixLocator) else None
        others = policy.others_of(apps, policy.process_groups(listed.stdout), group)
        name = posixpath.basename(sampling.path)
        profiled = await self._text(_dcgm_path(sampling.path)) or ""  # none where the host has no dcgmi
        try:  # the tools' output is untrusted: a row neither writes is refused, and the bench goes on without it
            found = dcgm.with_dcgm(
                policy.summarise(samples, policy.INTERVAL_MS, name, others), profiled, dcgm.file_of(name)
            )
        except InputError as exc:
            return None, {}, str(exc)
        health, rows, health_why = await self._health(sampling.path)
        if found is None and health is None:
            return None, {}, "the sampler wrote no sample it could read"
        if found is None:  # the health rows alone: a bench still flagged where its GPU was throttled
            found = GpuTelemetry(interval_ms=policy.INTERVAL_MS, seconds=0.0)
        found = found.model_copy(update={"health": health, "health_why": health_why or None})
        kept = ({name: samples} if found.gpus else {}) | ({found.dcgm_file: profiled} if found.dcgm_file else {})
        kept |= {health.file: rows} if health is not None and health.file else {}
        return found, kept, ""

    async def _health(self, path: str) -> tuple[HealthRecord | None, str, str]:
        """The GPUs' health beside the bench (policy/gpu_health.py), the rows as nvidia-smi wrote them, and why there
        is none."""
        rows = await self._text(path + ".health.all")
        xid_text = await self._text(path + ".xid.new", None)
        xid = gpu_health.xid_lines(xid_text) if xid_text is not None else None
        why = f"the kernel log (dmesg) is not readable on target {self.target.name}"
        try:  # untrusted as the samples are: a row nvidia-smi never writes is refused, and the bench goes on
            health = gpu_health.summarise(rows or "", health_name(posixpath.basename(path)), xid, why)
        except InputError as exc:
            return None, "", str(exc)
        if health is None:
            return None, "", "nvidia-smi answered no health query (clock event reasons, temperature, ECC)"
        return health, rows or "", ""

    async def _text(self, path: str, missing: str | None = "") -> str | None:
        try:
            return await self.target.read_text(path)
        except (CommandTimeout, TargetPathError):
            return missing


__all__ = ["GpuSampler", "Sampling", "health_name", "samples_name"]
