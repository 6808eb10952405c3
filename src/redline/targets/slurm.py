"""The Slurm target: every server is a job (or, with `allocation: held`, a job step of one allocation), submitted
with Slurm's own commands on a login host, as a person would.

    start()       preflight (sinfo: free GPUs on the partition, else refused with the node table), the batch
                  script written to the run folder, `sbatch --hold`, the job id written to the run folder,
                  then `scontrol release`: no engine runs without its record. Held: a step in the allocation.
    wait_ready()  squeue's state (PENDING past pending_deadline_s: cancelled with Slurm's reason), then the
                  engine's health: inside the allocation (reach: step) or at the node's address (reach: node)
    run()         a command for a server (a bench) is a step in its job, on its node; any other on the login host
    read_text()   the run folders are on storage the nodes and the login host share: read on the login host
    stop()        scancel of the job or step, once its name and comment say redline submitted it; then wait
                  until Slurm has it gone (proctrack/cgroup: every process of it)
    teardown()    scancel of every job of this target's (of one experiment's) by name and comment, nothing else

How a job ended is sacct's (State COMPLETED and ExitCode 0:0 is success), scontrol's where accounting has nothing.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import replace
from datetime import UTC, datetime

import anyio
import httpx

from redline.errors import CommandTimeout, InputError, TargetBusy, TargetError, TargetPathError
from redline.targets.base import (
    MAX_TARGET_TEXT,
    RUN_ID_RE,
    HostInfo,
    Launch,
    RunResult,
    ServerHandle,
    SlurmLocator,
    Target,
    WaitOutcome,
    check_argv,
    check_env,
    check_health_url,
)
from redline.targets.local import LocalTarget
from redline.targets.port_reads import MAX_URL_TEXT
from redline.targets.posix import PosixTarget
from redline.targets.slurm_cli import SlurmCli
from redline.targets.slurm_hold import Holds
from redline.targets.slurm_jobs import OwnJobs
from redline.targets.slurm_names import JobTag, job_name, parse_comment, run_of, word
from redline.targets.slurm_parse import Job, JobEnd, give_up_pending, pending_message
from redline.targets.slurm_script import EXIT_FILE, JOB_FILE, ServerJob, probe_argv, render_server, step_argv
from redline.targets.slurm_spec import SlurmSpec
from redline.targets.ssh import SSHTarget
from redline.targets.unit import current_unit

__all__ = ["SlurmSpec", "SlurmTarget", "from_spec"]

# a URL host that means "the node the server runs on": asked through the node's own address instead
_ON_THE_NODE = ("127.0.0.1", "localhost", "0.0.0.0", "::1", "::")


def from_spec(name: str, spec: SlurmSpec) -> SlurmTarget:
    return SlurmTarget(name, spec)


class SlurmTarget(Target):
    """A partition of a Slurm cluster. Per boot: up to max_jobs servers at once, a job each; held: one at a time."""

    poll_s: float = 1.0
    gone_wait_s: float = 120.0  # after scancel: how long Slurm may take to have the job gone
    submits_jobs = True

    def __init__(self, name: str, spec: SlurmSpec) -> None:
        super().__init__(name, spec.workdir, **spec.engine_settings())
        self.spec = spec
        self.login: PosixTarget = (
            SSHTarget(name, spec.login.model_copy(update={"workdir": spec.workdir}))
            if spec.login is not None
            else LocalTarget(name, workdir=spec.workdir)
        )
        self.cli = SlurmCli(spec, self.login)
        self.jobs = OwnJobs(name, spec, self.cli)
        self.holds = Holds(name, spec, self.cli, self.jobs.preflight)
        self.max_servers = 1 if spec.allocation == "held" else spec.max_jobs
        self.last_node: str | None = None
        self._placing = anyio.Lock()

    # ---- the preflight ------------------------------------------------------------------------------------

    # ---- starting -----------------------------------------------------------------------------------------

    def _server_job(
        self, argv: list[str], env: dict[str, str], cwd: str | None, log_path: str, run_dir: str, exclusive: bool
    ) -> ServerJob:
        check_argv(argv)
        check_env(env)
        runs, run_id = posixpath.split(run_dir)
        if runs != posixpath.join(self.workdir, "runs") or not RUN_ID_RE.match(run_id):
            raise InputError(f"{run_dir!r} is not a run folder of target {self.name} ({self.workdir}/runs/<run id>)")
        unit = current_unit()
        tag = JobTag(self.name, word(self.experiment), "server", run=run_id, unit=unit, exclusive=exclusive)
        name = job_name(self.spec.job_prefix, self.experiment, run_id)
        log = posixpath.join(run_dir, log_path)
        return ServerJob(name, tag.comment(), run_dir, log, list(argv), dict(env), cwd)

    async def submission_preview(self, argv: list[str], *, env: dict[str, str]) -> str | None:
        """What start() would submit: the commands and the whole script. It only reads: the preflight runs (and picks
        the node start() would pin)."""
        job = self._server_job(argv, env, None, "boot.log", self.new_run_dir(), True)
        if self.spec.allocation == "held":
            return await self._preview_step(job)
        job = replace(job, node=await self.jobs.preflight())
        script = render_server(self.spec, job)
        return f"sbatch --parsable --hold {job.script_path}; scontrol release <id>\n# {job.script_path}:\n{script}"

    async def _preview_step(self, job: ServerJob) -> str:
        hold = await self.holds.find(self.experiment)
        if hold is not None:
            first = f"# the held allocation, job {hold.job_id} ({hold.state}), already holds its node\n"
        else:
            script = self.holds.script(self.experiment, await self.jobs.preflight())
            first = f"# first, the held allocation ({self.holds.folder(self.experiment)}/job.sbatch):\n"
            first += f"sbatch --parsable --hold ...; scontrol release <id>\n{script}\n"
        srun = step_argv("<allocation>", job.name, output=f"{job.run_dir}/slurm-step.out", gpus=self.spec.gpu_option)
        steps = f"# then each boot, a step in it:\n{' '.join(srun)} bash {job.script_path}\n"
        return first + steps + render_server(self.spec, job)

    async def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str | None,
        log_path: str,
        exclusive: bool = False,
        run_dir: str | None = None,
    ) -> ServerHandle:
        """Submit the server as a job (held: start it as a step of the allocation); returns once it is recorded."""
        job = self._server_job(argv, env, cwd, log_path, run_dir or self.new_run_dir(), exclusive)
        started_at = datetime.now(UTC).isoformat()
        async with self._placing:  # check and submit as one: two cells at once cannot both take the last GPU
            if exclusive:
                await self._refuse_if_busy()
            if self.spec.allocation == "held":
                locator = await self._start_step(job)
            else:
                locator = await self._submit(job)
        return ServerHandle(
            target=self.name, run_dir=job.run_dir, log_path=job.log_path, started_at=started_at, locator=locator
        )

    async def _submit(self, job: ServerJob) -> SlurmLocator:
        job = replace(job, node=await self.jobs.preflight())
        await self.cli.write(job.script_path, render_server(self.spec, job))
        job_id = await self.cli.submit_held(job.script_path)
        try:
            await self.cli.write(posixpath.join(job.run_dir, JOB_FILE), job_id + "\n")
            await self.cli.release(job_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.cli.cancel([job_id])
            raise
        return SlurmLocator(job_id=job_id, name=job.name, run_id=posixpath.basename(job.run_dir))

    async def _start_step(self, job: ServerJob) -> SlurmLocator:
        hold = await self.holds.acquire(self.experiment)
        self.last_node = hold.node
        await self.holds.touch(self.experiment)
        await self.cli.write(job.script_path, render_server(self.spec, job))
        step = await self.holds.launch(hold, job)
        await self.cli.write(posixpath.join(job.run_dir, JOB_FILE), f"{hold.job_id}.{step}\n")
        run_id = posixpath.basename(job.run_dir)
        return SlurmLocator(job_id=hold.job_id, step=step, name=job.name, run_id=run_id, node=hold.node)

    async def _refuse_if_busy(self) -> None:
        """TargetBusy while an exclusive server of this target's still runs (held: a server step in its allocation)."""
        if self.spec.allocation == "held":
            hold = await self.holds.find(self.experiment)
            busy = (
                [f"step {s.job_id}.{s.step}" for s in await self.cli.steps(hold.job_id) if run_of(s.name)]
                if hold
                else []
            )
        else:
            tags = [(j, parse_comment(j.comment)) for j in await self.jobs.own() if j.state != "COMPLETING"]
            busy = [f"job {j.job_id}" for j, tag in tags if tag is not None and tag.role == "server" and tag.exclusive]
        if busy:
            raise TargetBusy(
                f"target {self.name} is busy: {busy[0]} that redline submitted there still runs an exclusive server; "
                "stop it first (redline ladder stop, or job_cancel on its job)"
            )

    async def launched(self, launch: Launch) -> ServerHandle | None:
        """The server a launch started: the job id its run folder records, else a job named after its run."""
        if launch.target != self.name:
            raise InputError(f"this launch belongs to target {launch.target!r}, not {self.name!r}")
        job = self._server_job(["-"], {}, None, "boot.log", launch.run_dir, False)
        try:
            recorded = (await self.login.read_text(posixpath.join(job.run_dir, JOB_FILE))).strip()
        except TargetPathError:
            named = await self.cli.jobs(f"--name={job.name}")
            recorded = named[0].job_id if named else ""
        job_id, _, step = recorded.partition(".")
        if not job_id.isdigit():
            return None
        run_id = posixpath.basename(job.run_dir)
        locator = SlurmLocator(job_id=job_id, step=step or None, name=job.name, run_id=run_id)
        return ServerHandle(
            target=self.name, run_dir=launch.run_dir, log_path=launch.log_path, started_at=launch.at, locator=locator
        )

    # ---- waiting, liveness, stopping ----------------------------------------------------------------------

    async def _state(self, loc: SlurmLocator) -> tuple[Job | None, JobEnd | None, str | None]:
        """(the job while squeue shows it, how it ended once it has, the node it runs on)."""
        if loc.step is not None:
            if any(s.step == loc.step for s in await self.cli.steps(loc.job_id)):
                return None, None, loc.node
            return None, await self._end(loc), None
        job = await self.cli.job(loc.job_id)
        if job is not None and job.state != "COMPLETING" and (job.pending or job.running):
            return job, None, job.nodes if job.running else None
        return job, await self._end(loc), None

    async def _end(self, loc: SlurmLocator) -> JobEnd:
        """How the server's job or step ended (sacct, scontrol), else by the exit status its script wrote."""
        end = await self.cli.ended(loc.id)
        if end is not None and end.ended:
            return end
        try:
            code = (await self.login.read_text(posixpath.join(self.workdir, "runs", loc.run_id, EXIT_FILE))).strip()
        except TargetPathError:
            code = ""
        return JobEnd(loc.id, "ENDED", f"{code}:0" if code.isdigit() else "", source="exit file")

    async def wait_ready(
        self, handle: ServerHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        """Poll the job, then health, until 200 (ready), the job ended (exited), or deadline_s passes. A job still
        PENDING pending_deadline_s after its submission is cancelled and reported with Slurm's reason."""
        loc = self._locator(handle)
        url = check_health_url(health_url)
        t0 = time.monotonic()
        end = t0 + deadline_s
        while True:
            job, ended, node = await self._state(loc)
            if ended is not None:
                return WaitOutcome(
                    status="exited", exit_code=ended.returncode, elapsed_s=time.monotonic() - t0, detail=ended.state
                )
            since = (datetime.now(UTC) - datetime.fromisoformat(handle.started_at)).total_seconds()
            if job is not None and job.pending and give_up_pending(job, since, self.spec.pending_deadline_s):
                await self.stop(handle, grace_s=0)
                what = f"{loc.describe()} ({loc.name}) on target {self.name}"
                raise TargetError(pending_message(what, since, job.reason) + "; it was cancelled")
            if node is not None and await self._get(loc, node, url) is not None:
                self.last_node = node
                return WaitOutcome(status="ready", elapsed_s=time.monotonic() - t0)
            if time.monotonic() >= end:
                return WaitOutcome(status="timeout", elapsed_s=time.monotonic() - t0)
            await anyio.sleep(max(0.0, min(poll_s, self.poll_s, end - time.monotonic())))

    async def http_text(
        self, handle: ServerHandle, url: str, *, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        loc = self._locator(handle)
        _, ended, node = await self._state(loc)
        if node is None or ended is not None:
            return None
        return await self._get(loc, node, check_health_url(url), body, timeout_s)

    async def _get(
        self, loc: SlurmLocator, node: str, url: httpx.URL, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        """GET url of the server (with `body`: POST that JSON) inside the allocation (reach: step), or from the login
        host at the node's address: its body on 200."""
        port, path = url.port or 80, url.raw_path.decode() or "/"
        if self.spec.reach == "step":
            probe = probe_argv(url.host, port, path, max(5, round(timeout_s)), body)
            argv = [*step_argv(loc.job_id, f"{loc.name}-probe"), *probe]
            argv[0] = self.cli.argv("srun")[0]
            done = await self.cli.call(argv, timeout_s=25 + timeout_s)
            return done.stdout[:MAX_URL_TEXT] if done.returncode == 0 else None
        where = url.copy_with(host=await self.jobs.address(node)) if url.host in _ON_THE_NODE else url
        return await self.login._get(where, timeout_s, body)

    async def is_alive(self, handle: ServerHandle) -> bool:
        _, ended, _ = await self._state(self._locator(handle))
        return ended is None

    async def stop(self, handle: ServerHandle, grace_s: float = 30.0) -> None:
        """SIGTERM the server's job (held: its step) once its name and comment say it is redline's, scancel it after
        grace_s, and wait until Slurm has it gone: with proctrack/cgroup, every process it started."""
        loc = self._locator(handle)
        job = await self.jobs.owned(loc)
        if job is not None and job.running:  # scancel --signal waits forever on a job that is still pending
            await self.cli.cancel([loc.id], signal="TERM")
        if job is not None and not await self._gone(loc, grace_s if job.running else 0):
            await self.cli.cancel([loc.id])
        if not await self._gone(loc, self.gone_wait_s):
            raise TargetError(
                f"{loc.describe()} on target {self.name} was cancelled but is still there "
                f"{grace_s + self.gone_wait_s:.0f}s later; look at `scontrol show job {loc.job_id}`"
            )
        if loc.step is not None:
            await self.holds.touch(self.experiment)

    async def _gone(self, loc: SlurmLocator, timeout_s: float) -> bool:
        """Wait up to timeout_s until squeue no longer shows the job (or step); whether it is gone."""
        end = time.monotonic() + timeout_s
        while True:
            if loc.step is not None:
                present = any(s.step == loc.step for s in await self.cli.steps(loc.job_id))
            else:
                present = await self.cli.job(loc.job_id) is not None
            if not present or time.monotonic() >= end:
                return not present
            await anyio.sleep(0.2)

    # ---- files and commands -------------------------------------------------------------------------------

    async def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float = 60,
        server: ServerHandle | None = None,
    ) -> RunResult:
        """A command for a server (a bench) as a step in its job, on its node; any other on the login host."""
        check_argv(argv)
        if server is None:
            return await self.login.run(argv, env=env, cwd=cwd, timeout_s=timeout_s)
        loc = self._locator(server)
        srun = step_argv(loc.job_id, f"{loc.name}-run")
        srun[0] = self.cli.argv("srun")[0]
        chdir = [f"--chdir={cwd}"] if cwd else []
        try:
            return await self.cli.call([*srun, *chdir, *argv], env=env, timeout_s=timeout_s)
        except CommandTimeout:
            steps = [f"{s.job_id}.{s.step}" for s in await self.cli.steps(loc.job_id) if s.name == f"{loc.name}-run"]
            await self.cli.cancel(steps)  # srun gone does not end its step: scancel does
            raise

    async def read_text(self, path: str, max_bytes: int = MAX_TARGET_TEXT) -> str:
        return await self.login.read_text(path, max_bytes)

    async def fetch(self, remote_path: str, local_path: str) -> None:
        await self.login.fetch(remote_path, local_path)

    async def host_info(self) -> HostInfo:
        """The node this target's servers run on: a held allocation's (acquired here, unless a dry run), else the
        last node a server of this target ran on."""
        if self.spec.allocation == "held":
            found = await self.holds.find(self.experiment)
            if found is not None and found.running:
                self.last_node = found.nodes
            elif not self.dry_run:
                self.last_node = (await self.holds.acquire(self.experiment)).node
        name = self.last_node or f"(a node of partition {self.spec.partition}, once Slurm picks one)"
        return HostInfo(hostname=name)

    async def teardown(self, experiment: str | None = None) -> list[str]:
        """scancel every job this target submitted (of one experiment, when named) and wait until they are gone; the
        names it cancelled. Jobs of anyone else, or of another target, are never touched."""
        return await self.jobs.teardown(experiment, self.gone_wait_s)

    async def close(self) -> None:
        await self.login.close()

    def _locator(self, handle: ServerHandle) -> SlurmLocator:
        self._check_handle(handle)
        if not isinstance(handle.locator, SlurmLocator):
            raise InputError(f"{handle.describe()} is not a Slurm job; target {self.name!r} cannot act on it")
        return handle.locator
