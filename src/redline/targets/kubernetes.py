"""The Kubernetes target: every server is a pod of its own, made through kubectl (or helm) as a person would.

    start()       free-GPU preflight, then `kubectl create -f -` (or `helm install`); the handle names the pod
    wait_ready()  the pod's phase (Pending past pending_deadline_s: its events reported, the pod deleted),
                  then the engine's health path through a port-forward or the pod's IP
    read_text()   the boot log is `kubectl logs` (a copy kept on this machine outlives the pod); other files
                  of a run are read in its pod; any other path in the toolbox pod
    run()         `kubectl exec` in the pod of the run folder the command names, else in the toolbox pod
    stop()        delete by label (or `helm uninstall` of a release redline labelled), wait until it is gone

Paths on this target are paths inside its pods: run folders are `<pod_workdir>/runs/<run id>`, and the
run id is also the pod's `redline.dev/run` label, which is how a path finds its pod again.
"""

from __future__ import annotations

import posixpath
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx

from redline.errors import InputError, TargetBusy, TargetError, TargetPathError
from redline.targets.base import (
    MAX_TARGET_TEXT,
    HostInfo,
    Launch,
    PodLocator,
    RunResult,
    ServerHandle,
    Target,
    WaitOutcome,
    check_argv,
    check_env,
    check_health_url,
    within,
)
from redline.targets.kubernetes_cli import Cluster, Json, PortForwards, labels, meta
from redline.targets.kubernetes_cluster import (
    PodState,
    choose_node,
    host_of,
    node_table,
    pod_state,
)
from redline.targets.kubernetes_deploy import Deployer, StartPreview
from redline.targets.kubernetes_manifest import ClusterCommands, ServerRun
from redline.targets.kubernetes_names import (
    EXCLUSIVE_KEY,
    EXPERIMENT_KEY,
    RELEASE_KEY,
    ROLE_KEY,
    RUN_KEY,
    TARGET_KEY,
    experiment_value,
    labels_of,
    object_name,
    target_value,
)
from redline.targets.kubernetes_pins import read_pin, write_pin
from redline.targets.kubernetes_pods import PodIO, RunFolders
from redline.targets.kubernetes_spec import KubernetesSpec
from redline.targets.port_reads import read_body

__all__ = ["KubernetesSpec", "KubernetesTarget", "from_spec"]


def from_spec(name: str, spec: KubernetesSpec) -> KubernetesTarget:
    return KubernetesTarget(name, spec)


class KubernetesTarget(Target):
    """A namespace of a cluster. Several servers may run at once: each start() is its own pod."""

    poll_s: float = 1.0  # how often wait_ready and stop look at a pod
    gone_wait_s: float = 180.0  # after the grace period: how long a deleted pod may take to go
    appear_s: float = 60.0  # how long a chart may take to make its pod
    submits_jobs = True
    max_servers = 64  # each server is a pod of its own, placed by the preflight and the scheduler

    def __init__(self, name: str, spec: KubernetesSpec) -> None:
        super().__init__(name, spec.pod_workdir, **spec.engine_settings())
        self.spec = spec
        self.commands = ClusterCommands(spec)
        self.local_dir = Path(spec.workdir or Path(tempfile.gettempdir()) / "redline-k8s" / name)
        self.node: str | None = spec.node  # every pod this target starts goes here, once chosen
        self.cluster = Cluster(self.commands)
        self.deployer = Deployer(spec, self.cluster, name)
        self.forwards = PortForwards(self.commands, self.local_dir / "forwards")
        self.folders = RunFolders(name, spec.pod_workdir, self.local_dir)
        self.pods = PodIO(
            self.folders, self.cluster, self.deployer, spec.container, self._toolbox_node, self.engine_env
        )
        self._http: httpx.AsyncClient | None = None
        self._placing = anyio.Lock()

    async def _toolbox_node(self) -> str | None:
        if self.dry_run:  # the toolbox pod is an object too: a dry run reads what exists and creates nothing
            raise TargetError(f"target {self.name}: a dry run creates nothing in the cluster, not even the toolbox")
        return await self.place(need_room=False)

    # ---- placement: the preflight -------------------------------------------------------------------------

    async def place(self, need_room: bool, remember: bool = True) -> str | None:
        """The node this target's next pod goes to, or None: the scheduler's (pin_node off, no node named).

        With pin_node, the first node picked is kept for the experiment, also across redline processes (a
        file in workdir), so every rung, cell or trial of it runs on one node. need_room: the preflight before
        a GPU is asked for. The request must fit the node now, by allocatable minus requested, or this fails
        with the node table instead of leaving a pod Pending.
        """
        spec = self.spec
        if self.node is None and spec.pin_node:
            self.node = read_pin(self._pin_file)
        if self.node is not None and not need_room:
            return self.node
        if not need_room and not spec.pin_node:
            return None
        rooms = await self.cluster.node_rooms(spec, pinned=self.node, need_room=need_room)
        node = choose_node(rooms, spec.gpus if need_room else 0)
        if node is None:
            asked = f"{spec.gpus} {spec.gpu_resource}" if need_room else "a node"
            pin = f"; this experiment is pinned to {self.node} ({self._pin_file})" if self.node else ""
            raise TargetError(
                f"target {self.name}: no node can take a pod asking {asked} now, so none was created{pin} "
                f"(allocatable minus what the pods on each node request):\n{node_table(rooms, spec.gpu_resource)}\n"
                "free GPUs on a node (stop what holds them), lower gpus:, or change node_selector/node"
            )
        if spec.pin_node or spec.node:
            self.node = node
            if remember:
                write_pin(self._pin_file, node)
        return self.node

    @property
    def _pin_file(self) -> Path:
        return self.local_dir / "pins" / experiment_value(self.spec.experiment_prefix, self.experiment)

    def _server_run(
        self, argv: list[str], env: dict[str, str], cwd: str | None, log_path: str, run_dir: str, exclusive: bool
    ) -> ServerRun:
        check_argv(argv)
        check_env(env)
        run_id = posixpath.basename(self.folders.check(run_dir))
        name = object_name(self.spec.experiment_prefix, self.experiment, run_id)
        release = name if self.spec.deploy == "helm" else None
        labels = labels_of(
            self.spec.experiment_prefix,
            self.experiment,
            self.name,
            run_id,
            log_name=log_path,
            exclusive=exclusive,
            release=release,
        )
        return ServerRun(name, run_id, run_dir, list(argv), dict(env), labels, cwd, self.node)

    async def preview_start(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str | None = None,
        log_path: str = "boot.log",
        exclusive: bool = True,
        run_dir: str | None = None,
    ) -> StartPreview:
        """A dry run of start(): the exact commands and documents it would submit. It only reads: the preflight
        runs (a request that cannot fit is refused here too) and picks the node start() would pin."""
        run_dir = run_dir or self.new_run_dir()
        self._server_run(argv, env, cwd, log_path, run_dir, exclusive)  # refuse bad input before any call
        pinned = self.node
        try:
            await self.place(need_room=self.spec.gpus > 0, remember=False)
            run = self._server_run(argv, env, cwd, log_path, run_dir, exclusive)
        finally:
            self.node = pinned  # a dry run changes nothing, not even the pin
        return self.deployer.preview(run, self.folders.local(run.run_id))

    async def submission_preview(self, argv: list[str], *, env: dict[str, str]) -> str | None:
        return (await self.preview_start(argv, env=env)).text()

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
        """Check the GPUs fit, then create the server's pod (or install its release); returns once the pod exists."""
        run_dir = run_dir or self.new_run_dir()
        self._server_run(argv, env, cwd, log_path, run_dir, exclusive)  # refuse bad input before any call
        async with self._placing:  # check and create as one: two cells at once cannot both take the last GPU
            if exclusive:
                await self._refuse_if_busy()
            await self.place(need_room=self.spec.gpus > 0)
            run = self._server_run(argv, env, cwd, log_path, run_dir, exclusive)
            started_at, local = datetime.now(UTC).isoformat(), self.folders.local(run.run_id)
            local.mkdir(parents=True, exist_ok=True)
            await self.deployer.submit(run, local)
            pod = await self._appeared(run)
        locator = self._locator_of(pod, run.run_id, run.labels)
        log = posixpath.join(run_dir, log_path)
        return ServerHandle(target=self.name, run_dir=run_dir, log_path=log, started_at=started_at, locator=locator)

    async def _appeared(self, run: ServerRun) -> Json:
        """The run's pod once it exists; a chart that makes no pod with redline's labels is uninstalled."""
        end = time.monotonic() + self.appear_s
        while (pod := await self.cluster.run_pod(run.run_id)) is None:
            if time.monotonic() >= end:
                await self.deployer.remove(run.labels.get(RELEASE_KEY), run.labels)
                raise TargetError(
                    f"{run.name} made no pod labelled {RUN_KEY}={run.run_id} within {self.appear_s:.0f}s, so it "
                    "was removed: the chart must put the values at helm.labels_path on its pod's labels"
                )
            await anyio.sleep(0.5)
        return pod

    async def _refuse_if_busy(self) -> None:
        exclusive = {TARGET_KEY: target_value(self.name), ROLE_KEY: "server", EXCLUSIVE_KEY: "true"}
        for pod in await self.cluster.pods(exclusive):
            if not pod_state(pod, self.spec.container).exited:
                name = meta(pod).get("name")
                raise TargetBusy(
                    f"target {self.name} is busy: pod {self.spec.namespace}/{name} that redline started there "
                    "still runs an exclusive server; stop it first (redline ladder stop, or job_cancel on its job)"
                )

    async def launched(self, launch: Launch) -> ServerHandle | None:
        """The server a launch started, found by its run folder's label."""
        if launch.target != self.name:
            raise InputError(f"this launch belongs to target {launch.target!r}, not {self.name!r}")
        run_id = posixpath.basename(self.folders.check(launch.run_dir))
        pod = await self.cluster.run_pod(run_id)
        if pod is None:
            return None
        locator = self._locator_of(pod, run_id, labels(pod))
        return ServerHandle(
            target=self.name, run_dir=launch.run_dir, log_path=launch.log_path, started_at=launch.at, locator=locator
        )

    def _locator_of(self, pod: Json, run_id: str, found: dict[str, str]) -> PodLocator:
        """A server pod's locator: its name, its run, and the experiment and helm release its labels name."""
        self.pods.know(run_id)  # a run of this target's own (kubernetes_pods.py: only those pods run a command)
        name = str(meta(pod).get("name"))
        return PodLocator(
            namespace=self.spec.namespace,
            pod=name,
            run_id=run_id,
            experiment=found.get(EXPERIMENT_KEY),
            release=found.get(RELEASE_KEY),
        )

    # ---- waiting, liveness, stopping ----------------------------------------------------------------------

    async def _state(self, loc: PodLocator) -> PodState:
        return pod_state(await self.cluster.run_pod(loc.run_id), self.spec.container)

    async def wait_ready(
        self, handle: ServerHandle, health_url: str, deadline_s: float, poll_s: float = 1.0
    ) -> WaitOutcome:
        """Poll the pod and then health until 200 (ready), the engine ended (exited), or deadline_s passes.

        A pod still Pending pending_deadline_s after its start, or stuck (an image that cannot be pulled
        by policy, a bad config), is deleted and reported with its events (TargetError).
        """
        loc = self._locator(handle)
        url = check_health_url(health_url)
        t0 = time.monotonic()
        end = t0 + deadline_s
        while True:
            state = await self._state(loc)
            if state.exited:
                return WaitOutcome(status="exited", exit_code=state.exit_code, elapsed_s=time.monotonic() - t0)
            since = (datetime.now(UTC) - datetime.fromisoformat(handle.started_at)).total_seconds()
            if state.stuck or (state.pending and since > self.spec.pending_deadline_s):
                why = state.stuck or f"was still Pending {since:.0f}s after it was created"
                await self._give_up(handle, loc, why)
            if state.running and state.name and await self._get(state, url) is not None:
                return WaitOutcome(status="ready", elapsed_s=time.monotonic() - t0)
            if time.monotonic() >= end:
                return WaitOutcome(status="timeout", elapsed_s=time.monotonic() - t0)
            await anyio.sleep(max(0.0, min(poll_s, self.poll_s, end - time.monotonic())))

    async def _give_up(self, handle: ServerHandle, loc: PodLocator, why: str) -> None:
        events = await self.cluster.events(loc.pod)
        await self.stop(handle, grace_s=0)
        raise TargetError(
            f"{loc.describe()} on target {self.name} {why}; it was deleted. Its events:\n{events}\n"
            "(FailedScheduling: no node has what it asks; look at the node table of `kubectl describe nodes`)"
        )

    async def http_text(
        self, handle: ServerHandle, url: str, *, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        state = await self._state(self._locator(handle))
        return await self._get(state, check_health_url(url), body, timeout_s) if state.running and state.name else None

    async def _get(self, state: PodState, url: httpx.URL, body: str | None = None, timeout_s: float = 5) -> str | None:
        """GET url of the engine (with `body`: POST that JSON) from outside the pod (through a port-forward, or at the
        pod's IP): its body on 200."""
        assert state.name is not None
        port = url.port or 80
        if self.spec.reach == "pod-ip":
            where = url.copy_with(host=state.pod_ip) if state.pod_ip else None
        else:  # None: the pod ended since the look that saw it running; the next look says how
            local = await self.forwards.local_port(state.name, port)
            where = url.copy_with(host="127.0.0.1", port=local) if local is not None else None
        if where is None:
            return None
        if self._http is None:
            self._http = httpx.AsyncClient(trust_env=False)
        try:
            return await read_body(self._http, where, timeout_s, body, Host=url.netloc.decode())
        except httpx.HTTPError:
            # kubectl's port-forward can stay up yet forward nothing after a refused connection (its streams
            # time out from then on): a forward that failed once is made afresh for the next look
            await self.forwards.close(state.name, port)
            return None

    async def is_alive(self, handle: ServerHandle) -> bool:
        state = await self._state(self._locator(handle))
        return not state.exited

    async def stop(self, handle: ServerHandle, grace_s: float = 30.0) -> None:
        """Keep the boot log, delete the server by its labels (helm: uninstall its release) and wait until its
        pod is gone, so its GPUs are free by Kubernetes' own count before the next boot."""
        loc = self._locator(handle)
        await self.pods.keep_log(loc.run_id)
        await self.forwards.close(loc.pod)
        run = {RUN_KEY: loc.run_id}
        await self.deployer.remove(loc.release, run, grace_s=max(1, round(grace_s)))
        await self.cluster.wait_gone(run, grace_s + self.gone_wait_s, f"{loc.describe()} on target {self.name}")

    async def teardown(self, experiment: str | None = None) -> list[str]:
        """Delete what redline labelled for this target (only the experiment's, when named): releases, then pods.
        The names it removed."""
        chosen = {TARGET_KEY: target_value(self.name)}
        if experiment is not None:
            chosen[EXPERIMENT_KEY] = experiment_value(self.spec.experiment_prefix, experiment)
        removed = await self.deployer.remove_releases(chosen)
        removed += [str(meta(p).get("name")) for p in await self.cluster.pods(chosen)]
        await self.deployer.remove(None, chosen, grace_s=1)
        await self.cluster.wait_gone(chosen, self.gone_wait_s, f"what redline labelled {chosen}")
        await self.forwards.close()
        return removed

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
        """`kubectl exec` the command in the pod of the server it is for (a bench), else in the toolbox pod."""
        check_argv(argv)
        done = await self.pods.exec(argv, cwd, timeout_s, env, self._locator(server).run_id if server else None)
        return RunResult(returncode=done.returncode, stdout=done.text, stderr=done.stderr)

    async def read_text(self, path: str, max_bytes: int = MAX_TARGET_TEXT) -> str:
        return within(await self.pods.read(path), max_bytes, f"{path} on {self.name}")

    async def fetch(self, remote_path: str, local_path: str) -> None:
        data = await self.pods.read(remote_path)
        try:
            Path(local_path).parent.mkdir(parents=True, exist_ok=True)
            Path(local_path).write_bytes(data)
        except OSError as exc:
            raise TargetPathError(f"cannot write {local_path}: {exc.strerror or exc}") from exc

    async def host_info(self) -> HostInfo:
        """The node this target's pods go to: its name, machine id, and the GPUs a pod gets where labels name them."""
        node = self.node or await self.place(need_room=False)
        if node is None:
            return HostInfo(hostname=f"(any node of {self.spec.namespace}: pin_node is off)")
        return host_of(await self.cluster.json(self.commands.node(node), f"reading node {node}"), self.spec.gpus)

    async def close(self) -> None:
        await self.forwards.close()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _locator(self, handle: ServerHandle) -> PodLocator:
        self._check_handle(handle)
        if not isinstance(handle.locator, PodLocator):
            raise InputError(f"{handle.describe()} is not a pod; target {self.name!r} cannot act on it")
        self.pods.know(handle.locator.run_id)  # a handle redline hands it: its run is this target's from then on
        return handle.locator
