"""Files and commands in a Kubernetes target's pods.

A path on the target is a path inside its pods. A run folder, `<pod_workdir>/runs/<run id>`, belongs to the
pod labelled with that run id: its boot log is `kubectl logs` (kept on this machine too, so it outlives the
pod), its other files are read with `kubectl exec ... cat`, and a command run for its server (a bench, which
redline runs with `server=` the server's handle) runs in that pod. Any other command goes to the target's
toolbox pod, whatever its argv names (issue 19, class 6): a path in a tool argument, such as a model path
naming another run's folder, never routes a command into another run's pod. Only the runs this target
started, or was handed a handle of by redline, are read from their pods; any other path is read in the toolbox.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from redline.errors import InputError, TargetError, TargetPathError
from redline.targets.base import RUN_ID_RE
from redline.targets.kubernetes_cli import Cluster, Completed, labels
from redline.targets.kubernetes_cluster import PodState, pod_state
from redline.targets.kubernetes_deploy import Deployer
from redline.targets.kubernetes_names import LOG_KEY
from redline.targets.posix_scripts import RUN_SCRIPT, env_cwd_args


@dataclass(frozen=True)
class RunFolders:
    """Where a target's run folders are: inside its pods, and their copies on this machine. Pure."""

    target: str
    pod_workdir: str
    local_dir: Path

    @property
    def runs(self) -> str:
        return posixpath.join(self.pod_workdir, "runs")

    def check(self, run_dir: str) -> str:
        """A run folder of this target's own: <pod_workdir>/runs/<a run id>, nothing else."""
        runs, name = posixpath.split(run_dir)
        if runs != self.runs or not RUN_ID_RE.match(name):
            raise InputError(f"{run_dir!r} is not a run folder of target {self.target} ({self.runs}/<run id>)")
        return run_dir

    def named(self, word: str) -> str | None:
        """The id of the run folder a word is, or lies in; None for any other word."""
        prefix = self.runs + "/"
        run_id = word[len(prefix) :].split("/", 1)[0] if word.startswith(prefix) else ""
        return run_id if RUN_ID_RE.match(run_id) else None

    def of(self, path: str) -> tuple[str, str] | None:
        """(run id, the path inside its run folder) for a file in a run folder; None for any other path."""
        run_id = self.named(path)
        inside = posixpath.normpath(path.split(f"/{run_id}/", 1)[1]) if run_id and f"/{run_id}/" in path else ""
        if run_id is None or inside in ("", ".") or inside.startswith(("..", "/")):
            return None  # not in a run folder, or leading out of it: read inside the pods only
        return run_id, inside

    def local(self, run_id: str) -> Path:
        """The run's folder on this machine: its boot log's copy, the documents submitted."""
        return self.local_dir / "runs" / run_id


class PodIO:
    """Runs commands and reads files in a target's pods."""

    def __init__(
        self,
        folders: RunFolders,
        cluster: Cluster,
        deployer: Deployer,
        container: str,
        toolbox_node: Callable[[], Awaitable[str | None]],
        toolbox_env: dict[str, str],
    ) -> None:
        self.folders = folders
        self.cluster = cluster
        self.commands = cluster.commands
        self.deployer = deployer
        self.container = container
        self.toolbox_node = toolbox_node
        self.toolbox_env = toolbox_env
        self._made: set[str] = set()  # runs whose folder was made in their pod
        self.runs: set[str] = set()  # runs this target started, or was handed a handle of: its own record

    def know(self, run_id: str) -> None:
        """A run of this target's own: started by it, or handed to it by redline (a server record's handle)."""
        self.runs.add(run_id)

    async def pod_for(self, run_id: str | None) -> str:
        """The pod a command runs in: the running pod of the server it is run for (a run of this target's own),
        else the toolbox. Never read from the command's argv."""
        if run_id is None:
            return await self.deployer.toolbox(await self.toolbox_node(), self.toolbox_env)
        if run_id not in self.runs:
            raise TargetError(f"run {run_id} is not one target {self.folders.target} started: nothing runs in its pod")
        state = pod_state(await self.cluster.run_pod(run_id), self.container)
        if not state.running or state.name is None:
            raise TargetError(f"the server of run {run_id} on target {self.folders.target} is not running")
        if run_id not in self._made:  # the run folder, for what the command writes there
            folder = posixpath.join(self.folders.runs, run_id)
            made = await self.cluster.call(self.commands.exec(state.name, ["mkdir", "-p", "--", folder]))
            made.check(f"making {folder} in pod {state.name}")
            self._made.add(run_id)
        return state.name

    async def exec(
        self,
        argv: list[str],
        cwd: str | None,
        timeout_s: float,
        env: dict[str, str] | None = None,
        run_id: str | None = None,
    ) -> Completed:
        """`kubectl exec` argv in the pod of the run it is for (else the toolbox's); env and cwd through the same
        constant script as a POSIX target's."""
        pod = await self.pod_for(run_id)
        inner = ["sh", "-c", RUN_SCRIPT, "sh", *env_cwd_args(env, cwd), *argv] if env or cwd else argv
        return await self.cluster.call(self.commands.exec(pod, inner), timeout_s=timeout_s)

    async def read(self, path: str) -> bytes:
        """A file's bytes: the boot log from `kubectl logs`, a file of one of this target's runs from its pod (or the
        copy kept here once the pod is gone), any other path from the toolbox pod."""
        found = self.folders.of(path)
        if found is None or found[0] not in self.runs:
            done = await self.exec(["cat", "--", path], None, 60)
        else:
            run_id, inside = found
            pod = await self.cluster.run_pod(run_id)
            state = pod_state(pod, self.container)
            if pod is not None and inside == labels(pod).get(LOG_KEY):
                return await self.log(run_id, state)
            if not state.running or state.name is None:
                kept = self.folders.local(run_id) / inside
                if kept.is_file():
                    return kept.read_bytes()
                raise TargetPathError(f"cannot read {path} on {self.folders.target}: its pod is gone, no copy kept")
            done = await self.cluster.call(self.commands.exec(state.name, ["cat", "--", path]))
        if done.returncode != 0:
            said = done.stderr.strip() or done.text.strip()
            raise TargetPathError(f"cannot read {path} on {self.folders.target}: {said}")
        return done.stdout

    async def log(self, run_id: str, state: PodState) -> bytes:
        """The engine's output as `kubectl logs` has it now (its first life, if it restarted), kept here too."""
        assert state.name is not None
        done = await self.cluster.call(self.commands.logs(state.name, previous=state.restarts > 0), timeout_s=120)
        kept = self.folders.local(run_id) / state.labels.get(LOG_KEY, "boot.log")
        if done.returncode != 0:
            return kept.read_bytes() if kept.is_file() else b""  # not started yet: no output so far
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_bytes(done.stdout)
        return done.stdout

    async def keep_log(self, run_id: str) -> None:
        """Copy a run's boot log here before its pod goes: reading it still works afterwards."""
        pod = await self.cluster.run_pod(run_id)
        if pod is not None and LOG_KEY in labels(pod):
            await self.log(run_id, pod_state(pod, self.container))
