"""Slurm's own commands, run on the login host (this one, or one reached over SSH by the SSH target's rules):
argv lists only, SLURM_CONF from the targets file, each answer parsed by slurm_parse.py.

Only redline's own jobs are ever cancelled: `cancel` is given ids that the caller has matched to a job name and
comment of its own (slurm.py `_owned`), and squeue lists only the user's jobs (`--me`).
"""

from __future__ import annotations

import posixpath

from redline.errors import TargetError
from redline.targets.base import RunResult, Target
from redline.targets.posix_scripts import PRIVATE_EXIT, not_private
from redline.targets.slurm_parse import (
    SACCT_FIELDS,
    SINFO_FIELDS,
    SQUEUE_FIELDS,
    STEP_FIELDS,
    Job,
    JobEnd,
    JobStep,
    NodeRoom,
    format_of,
    jobs,
    node_rooms,
    sacct_end,
    scontrol_end,
    steps,
)
from redline.targets.slurm_script import WRITE_SCRIPT
from redline.targets.slurm_spec import SlurmSpec

NO_SUCH_JOB = "Invalid job id specified"  # squeue's and scontrol's words for a job slurmctld has forgotten


class SlurmCli:
    """The Slurm commands of one target, through its login host."""

    def __init__(self, spec: SlurmSpec, login: Target) -> None:
        self.spec = spec
        self.login = login
        self.env = {"SLURM_CONF": spec.slurm_conf} if spec.slurm_conf else {}

    def argv(self, command: str, *args: str) -> list[str]:
        """A Slurm command as the login host runs it: from slurm_bin when the targets file names one."""
        program = posixpath.join(self.spec.slurm_bin, command) if self.spec.slurm_bin else command
        return [program, *args]

    async def call(self, argv: list[str], *, timeout_s: float = 60, env: dict[str, str] | None = None) -> RunResult:
        result = await self.login.run(argv, env={**self.env, **(env or {})}, timeout_s=timeout_s)
        if result.returncode == 127:
            raise TargetError(
                f"{argv[0]} is not on the login host of target {self.login.name}: install Slurm's clients there, "
                "or name their folder (slurm_bin: /path/to/bin)"
            )
        return result

    async def check(self, what: str, command: str, *args: str, timeout_s: float = 60) -> str:
        """A command's stdout, or TargetError naming what failed and what Slurm said."""
        done = await self.call(self.argv(command, *args), timeout_s=timeout_s)
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}")[-2000:]
            raise TargetError(f"{what} failed: {command} said: {said}")
        return done.stdout

    # ---- reading ---------------------------------------------------------------------------------------------

    async def nodes(self) -> tuple[list[NodeRoom], str]:
        """The partition's nodes, and sinfo's text as it printed it (for the record)."""
        args = ("-h", "-N", f"--partition={self.spec.partition}", f"--Format={format_of(SINFO_FIELDS)}")
        text = await self.check(f"listing the nodes of partition {self.spec.partition}", "sinfo", *args)
        return node_rooms(text), text

    async def jobs(self, *selectors: str) -> list[Job]:
        """The user's jobs that selectors pick (`--name=...`, `--jobs=...`), any state squeue still shows."""
        args = ["-h", "--me", *selectors, f"--Format={format_of(SQUEUE_FIELDS)}"]
        done = await self.call(self.argv("squeue", *args))
        if done.returncode != 0 and NO_SUCH_JOB in done.stderr:
            return []
        if done.returncode != 0:
            raise TargetError(f"listing jobs failed: squeue said: {done.stderr.strip()[-2000:]}")
        return jobs(done.stdout)

    async def job(self, job_id: str) -> Job | None:
        found = [j for j in await self.jobs(f"--jobs={job_id}") if j.job_id == job_id]
        return found[0] if found else None

    async def steps(self, job_id: str) -> list[JobStep]:
        """The steps of a job now running (none once it has ended)."""
        args = ["-h", "-s", f"--jobs={job_id}", f"--Format={format_of(STEP_FIELDS)}"]
        done = await self.call(self.argv("squeue", *args))
        if done.returncode != 0 and NO_SUCH_JOB in done.stderr:
            return []
        if done.returncode != 0:
            raise TargetError(f"listing the steps of job {job_id} failed: squeue said: {done.stderr.strip()[-2000:]}")
        return [s for s in steps(done.stdout) if s.job_id == job_id]

    async def ended(self, job_id: str) -> JobEnd | None:
        """How a job or step (`1234.5`) ended: sacct's record, else scontrol's while slurmctld still has it."""
        args = ["-P", "-n", f"--jobs={job_id}", f"--format={','.join(SACCT_FIELDS)}"]
        done = await self.call(self.argv("sacct", *args))
        end = sacct_end(done.stdout, job_id) if done.returncode == 0 else None
        if end is not None and end.ended:
            return end
        shown = await self.call(self.argv("scontrol", "show", "job", "-o", job_id.partition(".")[0]))
        fallback = scontrol_end(shown.stdout) if shown.returncode == 0 and "." not in job_id else None
        return fallback if fallback is not None and fallback.ended else end

    # ---- acting ----------------------------------------------------------------------------------------------

    async def write(self, path: str, text: str) -> None:
        """Write a file on the login host (the shared work folder, the caller's alone: posix_scripts.PRIVATE), its
        folder made first."""
        argv = ["sh", "-c", WRITE_SCRIPT, "sh", self.spec.workdir, posixpath.dirname(path), text, path]
        wrote = await self.login.run(argv)
        if wrote.returncode == PRIVATE_EXIT:
            raise TargetError(not_private(self.login.name, wrote.stderr))
        if wrote.returncode != 0:
            raise TargetError(f"cannot write {path} on the login host of {self.login.name}: {wrote.stderr.strip()}")

    async def submit_held(self, script: str) -> str:
        """sbatch the script on hold (it runs nothing until released); its job id."""
        out = await self.check("submitting the job", "sbatch", "--parsable", "--hold", script)
        job_id = out.strip().split(";")[0]
        if not job_id.isdigit():
            raise TargetError(f"sbatch printed {out.strip()!r}, not a job id")
        return job_id

    async def release(self, job_id: str) -> None:
        await self.check(f"releasing job {job_id}", "scontrol", "release", job_id)

    async def cancel(self, ids: list[str], signal: str | None = None) -> None:
        """scancel these jobs or steps (ids the caller matched to redline's own names and comments); with a signal,
        send it to every process of theirs (a job's batch script too) and let them end as they will."""
        if ids:
            jobs = any("." not in i for i in ids)
            how = [f"--signal={signal}", *(["--full"] if jobs else [])] if signal else []
            done = await self.call(self.argv("scancel", *how, *ids))
            if done.returncode != 0 and NO_SUCH_JOB not in done.stderr and "already completing" not in done.stderr:
                raise TargetError(f"scancel {' '.join(ids)} failed: {done.stderr.strip()[-2000:]}")
