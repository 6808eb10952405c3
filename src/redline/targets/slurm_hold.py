"""A held allocation (`allocation: held`): one job holds a node for an experiment, and every boot of it is a job
step inside (`srun --jobid`), so the queue is paid once and every rung, cell or trial runs on the same node.

The allocation is found again by its name, `<prefix>-<experiment>-hold`, and its comment (this target's, role
hold), also from another redline process. It ends itself once no step runs and redline has not used it for
hold_idle_s (the `lease` file in its folder, touched at every start and stop), at its time limit, or at teardown.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from redline.errors import TargetError
from redline.targets.slurm_cli import SlurmCli
from redline.targets.slurm_names import JobTag, hold_name, tag_if_ours, word
from redline.targets.slurm_parse import Job, give_up_pending, pending_message
from redline.targets.slurm_script import DETACH_SCRIPT, JOB_FILE, SCRIPT_NAME, ServerJob, render_hold, step_argv
from redline.targets.slurm_spec import SlurmSpec


@dataclass(frozen=True)
class Hold:
    """A running allocation: its job id, its node and its folder (script, lease, Slurm's output)."""

    job_id: str
    node: str
    folder: str
    waited_s: float  # how long this call waited for it to start (0: it was already running)


class Holds:
    """The held allocations of one target, one per experiment."""

    poll_s: float = 0.5
    step_appear_s: float = 30.0  # how long srun may take to make its step

    def __init__(self, target: str, spec: SlurmSpec, cli: SlurmCli, preflight: Callable[[], Awaitable[str]]) -> None:
        self.target = target
        self.spec = spec
        self.cli = cli
        self.preflight = preflight

    def name(self, experiment: str | None) -> str:
        return hold_name(self.spec.job_prefix, experiment)

    def folder(self, experiment: str | None) -> str:
        return posixpath.join(self.spec.workdir, "holds", self.name(experiment))

    def script(self, experiment: str | None, node: str | None) -> str:
        """The held allocation's whole batch script, as start() would submit it."""
        tag = JobTag(target=self.target, experiment=word(experiment), role="hold")
        return render_hold(self.spec, self.name(experiment), tag.comment(), self.folder(experiment), node)

    async def find(self, experiment: str | None) -> Job | None:
        """The experiment's allocation, pending or running, if this target holds one."""
        for job in await self.cli.jobs(f"--name={self.name(experiment)}"):
            tag = tag_if_ours(job.name, job.comment, self.target, self.spec.job_prefix)
            if tag is not None and tag.role == "hold" and job.state in ("PENDING", "RUNNING"):
                return job
        return None

    async def acquire(self, experiment: str | None) -> Hold:
        """The experiment's running allocation: the one held already, else a new one (after the preflight),
        waited for up to pending_deadline_s and cancelled with Slurm's reason past it."""
        found = await self.find(experiment)
        if found is not None and found.running:
            return Hold(found.job_id, found.nodes, self.folder(experiment), 0.0)
        job_id = found.job_id if found is not None else await self._submit(experiment)
        return await self._running(job_id, experiment)

    async def _submit(self, experiment: str | None) -> str:
        node = await self.preflight()
        folder = self.folder(experiment)
        script = posixpath.join(folder, SCRIPT_NAME)
        await self.cli.write(script, self.script(experiment, node))
        job_id = await self.cli.submit_held(script)
        try:
            await self.cli.write(posixpath.join(folder, JOB_FILE), job_id + "\n")
            await self.cli.release(job_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.cli.cancel([job_id])
            raise
        return job_id

    async def _running(self, job_id: str, experiment: str | None) -> Hold:
        t0 = time.monotonic()
        while True:
            job = await self.cli.job(job_id)
            waited = time.monotonic() - t0
            if job is not None and job.running:
                return Hold(job_id, job.nodes, self.folder(experiment), waited)
            if job is None or not job.pending:
                end = await self.cli.ended(job_id)
                how = f"{end.state} {end.exit_code} ({end.reason})" if end else "gone"
                raise TargetError(f"held allocation {self.name(experiment)} (job {job_id}) ended before it ran: {how}")
            if give_up_pending(job, waited, self.spec.pending_deadline_s):
                await self.cli.cancel([job_id])
                what = f"held allocation {self.name(experiment)} (job {job_id}) on target {self.target}"
                raise TargetError(pending_message(what, waited, job.reason) + "; it was cancelled")
            await anyio.sleep(self.poll_s)

    async def touch(self, experiment: str | None) -> None:
        """Mark the allocation used now: it ends itself only hold_idle_s after the last touch."""
        await self.cli.login.run(["touch", "--", posixpath.join(self.folder(experiment), "lease")])

    async def launch(self, hold: Hold, job: ServerJob) -> str:
        """Start job's script as a step of the allocation, detached on the login host; the step's id."""
        out = posixpath.join(job.run_dir, "slurm-step.out")
        srun = step_argv(hold.job_id, job.name, output=out, gpus=self.spec.gpu_option)
        srun[0] = self.cli.argv("srun")[0]
        await self.cli.call(
            ["sh", "-c", DETACH_SCRIPT, "sh", posixpath.join(job.run_dir, "srun.out"), *srun, "bash", job.script_path]
        )
        end = time.monotonic() + self.step_appear_s
        while time.monotonic() < end:
            for step in await self.cli.steps(hold.job_id):
                if step.name == job.name:
                    return step.step
            await anyio.sleep(0.1)
        said = await self._srun_said(job.run_dir)
        raise TargetError(
            f"srun made no step {job.name} in allocation {hold.job_id} within {self.step_appear_s:.0f}s: {said}"
        )

    async def _srun_said(self, run_dir: str) -> str:
        try:
            said = await self.cli.login.read_text(posixpath.join(run_dir, "srun.out"))
        except TargetError:
            return "(no output)"
        return said.strip()[-1000:] or "(no output)"
