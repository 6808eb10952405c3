"""A Slurm target's own jobs: which jobs are its (by name and comment), the preflight that places the next one,
and teardown. Nothing here ever cancels a job whose name and comment do not both say this target submitted it.
"""

from __future__ import annotations

import time

import anyio

from redline.errors import TargetError
from redline.targets.base import SlurmLocator
from redline.targets.slurm_cli import SlurmCli
from redline.targets.slurm_names import parse_comment, tag_if_ours, word
from redline.targets.slurm_parse import Ask, Job, megabytes, node_table, place
from redline.targets.slurm_spec import SlurmSpec


class OwnJobs:
    """The jobs one target submitted, found by squeue (the user's own: `--me`), name and comment."""

    def __init__(self, target: str, spec: SlurmSpec, cli: SlurmCli) -> None:
        self.target = target
        self.spec = spec
        self.cli = cli
        self.addresses: dict[str, str] = {}  # node -> NodeAddr, as sinfo says

    async def own(self, experiment: str | None = None) -> list[Job]:
        """This target's jobs that squeue still shows (of one experiment, when named), by name and comment."""
        wanted = word(experiment) if experiment is not None else None
        jobs = [(j, tag_if_ours(j.name, j.comment, self.target, self.spec.job_prefix)) for j in await self.cli.jobs()]
        return [j for j, tag in jobs if tag is not None and wanted in (None, tag.experiment)]

    async def owned(self, loc: SlurmLocator) -> Job | None:
        """The job (or the step's allocation) when it is there and is this target's; None when it is gone;
        TargetError when a job of that id is someone else's (a handle never cancels another's job)."""
        job = await self.cli.job(loc.job_id)
        if job is None:
            return None
        tag = tag_if_ours(job.name, job.comment, self.target, self.spec.job_prefix)
        if tag is None or (job.name != loc.name if loc.step is None else tag.role != "hold"):
            raise TargetError(
                f"job {loc.job_id} ({job.name}) is not the job redline submitted as {loc.name} on target "
                f"{self.target}: left alone"
            )
        return job

    async def preflight(self) -> str:
        """The node the next job goes to, chosen from sinfo's free GPUs on the partition, counting what this user's
        pending jobs ask as taken and keeping this target's servers on nodes of their own (servers_per_node);
        TargetError with the node table when no node has room now."""
        spec = self.spec
        rooms, _ = await self.cli.nodes()
        self.addresses.update({r.name: r.address for r in rooms})
        waiting: dict[str, int] = {}
        for job in await self.cli.jobs("--states=PENDING", f"--partition={spec.partition}"):
            waiting[job.pinned] = waiting.get(job.pinned, 0) + job.gpus
        servers: dict[str, int] = {}
        for job in await self.own():
            tag = parse_comment(job.comment)
            if tag is not None and job.node and job.state != "COMPLETING":
                servers[job.node] = servers.get(job.node, 0) + 1
        ask = Ask(spec.gpus, spec.cpus_per_task or 1, megabytes(spec.mem or "0"), spec.exclusive, spec.servers_per_node)
        node, notes = place(rooms, ask, servers, waiting)
        if node is None:
            raise TargetError(
                f"target {self.target}, partition {spec.partition}: no node has room now for a job asking "
                f"{ask.words()} (sinfo):\n{node_table(rooms, notes)}\nso none was submitted: free GPUs on a node "
                "(scancel what holds them), ask for less, or use another partition"
            )
        return node

    async def address(self, node: str) -> str:
        """Where the login host reaches a node: its NodeAddr."""
        if node not in self.addresses:
            self.addresses.update({r.name: r.address for r in (await self.cli.nodes())[0]})
        return self.addresses.get(node, node)

    async def teardown(self, experiment: str | None, timeout_s: float) -> list[str]:
        """scancel this target's jobs (of one experiment, when named), wait until squeue has them gone; their names."""
        jobs = await self.own(experiment)
        await self.cli.cancel([j.job_id for j in jobs])
        stop_at = time.monotonic() + timeout_s
        ids = {j.job_id for j in jobs}
        while ids & {j.job_id for j in await self.cli.jobs()}:
            if time.monotonic() >= stop_at:
                raise TargetError(f"jobs {sorted(ids)} of target {self.target} were cancelled but are still there")
            await anyio.sleep(0.2)
        return [j.name for j in jobs]
