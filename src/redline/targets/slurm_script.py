"""The scripts and commands redline sends to Slurm, rendered whole. Pure functions.

A server is a batch script (`render_server`): `#SBATCH` lines for what the job asks, then the engine run in
the job's run folder with its output in the boot log and its exit status in `exit`. In held mode the same
script is a job step's (`srun --jobid=<allocation> ... bash <script>`: bash reads the `#SBATCH` lines as
comments). A held allocation is `render_hold`: it holds the node and ends itself once idle. Every value in
a script is quoted with shlex.quote; every command is an argv list, never a string for a shell.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field

from redline.targets.port_reads import MAX_URL_TEXT
from redline.targets.posix_scripts import PRIVATE
from redline.targets.slurm_spec import SlurmSpec

SCRIPT_NAME = "job.sbatch"
JOB_FILE = "job"  # the job id (or job.step), written before the job is released: no engine without a record
NODE_FILE = "node"  # the node the engine ran on, as its hostname says
GPUS_FILE = "gpus"  # the GPU indexes Slurm gave it on that node
EXIT_FILE = "exit"


@dataclass(frozen=True)
class ServerJob:
    """One boot as a job: its name and comment, its run folder, the engine's argv, env and working folder."""

    name: str
    comment: str
    run_dir: str
    log_path: str  # absolute, in run_dir
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    node: str | None = None  # the node the preflight chose (--nodelist); None: Slurm's choice

    @property
    def script_path(self) -> str:
        return posixpath.join(self.run_dir, SCRIPT_NAME)


def resources(spec: SlurmSpec, node: str | None) -> list[str]:
    """The sbatch options for what one job asks: partition, account, QOS, GPUs, CPUs, memory, time, node."""
    options = [f"--partition={spec.partition}", "--nodes=1", "--ntasks=1"]
    options += [f"--nodelist={node}"] if node else []
    options += [f"--account={spec.account}"] if spec.account else []
    options += [f"--qos={spec.qos}"] if spec.qos else []
    options += [spec.gpu_option] if spec.gpu_option else []
    options += [f"--cpus-per-task={spec.cpus_per_task}"] if spec.cpus_per_task else []
    options += [f"--mem={spec.mem}"] if spec.mem else []
    options += ["--exclusive"] if spec.exclusive else []
    return [*options, f"--time={spec.time_limit}", *spec.sbatch_options]


def directives(options: list[str]) -> str:
    """`#SBATCH` lines, one option each, quoted (sbatch's own parser takes shell quotes)."""
    return "".join(f"#SBATCH {shlex.quote(o)}\n" for o in options)


def render_server(spec: SlurmSpec, job: ServerJob) -> str:
    """The whole batch script of one boot."""
    own = [
        f"--job-name={job.name}",
        f"--comment={job.comment}",
        f"--chdir={job.run_dir}",
        f"--output={posixpath.join(job.run_dir, 'slurm-%j.out')}",
        "--open-mode=append",
    ]
    q = shlex.quote
    body = [
        "set -u",
        f"cd {q(job.run_dir)} || exit 97",
        "hostname >" + q(NODE_FILE),
        'echo "${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-}}" >' + q(GPUS_FILE),
        *(f"export {k}={q(v)}" for k, v in job.env.items()),
        *([f"cd {q(job.cwd)} || exit 97"] if job.cwd else []),
        f"{shlex.join(job.argv)} >>{q(job.log_path)} 2>&1",
        "code=$?",
        f'echo "$code" >{q(posixpath.join(job.run_dir, EXIT_FILE))}',
        'exit "$code"',
    ]
    header = "#!/bin/bash\n# redline: one server as a job (or, in a held allocation, a job step)\n"
    return header + directives([*own, *resources(spec, job.node)]) + "\n".join(body) + "\n"


def render_hold(spec: SlurmSpec, name: str, comment: str, folder: str, node: str | None) -> str:
    """The batch script of a held allocation: it holds the node while redline runs job steps in it, and ends
    itself once no step runs and redline has not used it (touched `lease`) for hold_idle_s."""
    own = [
        f"--job-name={name}",
        f"--comment={comment}",
        f"--chdir={folder}",
        f"--output={posixpath.join(folder, 'slurm-%j.out')}",
        "--open-mode=append",
    ]
    q = shlex.quote
    body = [
        "set -u",
        "hostname >" + q(NODE_FILE),
        "touch lease",
        "while sleep 5; do",
        '  steps=$(squeue -h -s -j "$SLURM_JOB_ID" -o %i 2>/dev/null | grep -cv -e "\\.batch$" -e "\\.extern$")',
        "  idle=$(( $(date +%s) - $(stat -c %Y lease) ))",
        f'  if [ "$steps" = 0 ] && [ "$idle" -gt {spec.hold_idle_s} ]; then exit 0; fi',
        "done",
    ]
    header = "#!/bin/bash\n# redline: a held allocation; every boot is a job step in it (srun --jobid)\n"
    return header + directives([*own, *resources(spec, node)]) + "\n".join(body) + "\n"


# ---- commands ------------------------------------------------------------------------------------------------


def step_argv(job_id: str, name: str, *, output: str | None = None, gpus: str | None = None) -> list[str]:
    """srun's options for a step inside job_id: one task on the job's node, sharing what the job holds."""
    argv = ["srun", f"--jobid={job_id}", "--overlap", "--nodes=1", "--ntasks=1", f"--job-name={name}", "--quiet"]
    if output is not None:
        argv += [f"--output={output}", "--open-mode=append"]
    return argv + ([gpus] if gpus else [])


# A GET of the engine's health or metrics (or a POST of the accuracy gate's JSON) inside the allocation, with bash's
# own /dev/tcp (no curl needed on the nodes): the body on stdout after a 200 (MAX_URL_TEXT of it at most: the rest is
# never read, and the probe's `timeout` bounds the whole exchange), exit 1 otherwise.
PROBE_SCRIPT = (
    f"MAX={MAX_URL_TEXT}\n"
    + r"""exec 3<>"/dev/tcp/$1/$2" || exit 1
if [ $# -ge 4 ]; then
  printf 'POST %s HTTP/1.0\r\nHost: %s:%s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n%s' \
    "$3" "$1" "$2" "${#4}" "$4" >&3
else
  printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\n\r\n' "$3" "$1" "$2" >&3
fi
read -r -n 4096 _ code _ <&3
while IFS= read -r -n 4096 line <&3 && [ -n "${line%$'\r'}" ]; do :; done
[ "$code" = 200 ] || exit 1
head -c "$MAX" <&3
"""
)

# Starts argv detached on the login host (a held allocation's step outlives this call), its output in $1.
DETACH_SCRIPT = 'out=$1; shift; setsid "$@" </dev/null >>"$out" 2>&1 & echo $!'

# Writes $3's text to the file $4, in the folder $2 of the work folder $1, which must be the caller's alone (PRIVATE).
WRITE_SCRIPT = "w=$1; " + PRIVATE + 'mkdir -p -- "$2" && printf %s "$3" >"$4"'


def probe_argv(host: str, port: int, path: str, timeout_s: int = 5, body: str | None = None) -> list[str]:
    """A GET of path at host:port (with `body`, an ASCII JSON text: a POST of it) by bash alone; its body on 200."""
    sent = [body] if body is not None else []
    return ["timeout", str(timeout_s), "bash", "-c", PROBE_SCRIPT, "probe", host, str(port), path, *sent]
