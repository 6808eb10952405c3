"""How a server gets onto the cluster and off it again: redline's own pod, or the user's Helm chart; and the
toolbox pod where commands that name no server run.

Submitting is `kubectl create -f -` (a taken name is refused, never patched) or `helm install` (a standing
release is refused, never upgraded). Removing selects by redline's labels only; a release is uninstalled only
when its values carry them, so nothing redline did not label is ever deleted.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from redline.errors import TargetError
from redline.targets.kubernetes_cli import Cluster, Json, meta
from redline.targets.kubernetes_cluster import pod_state
from redline.targets.kubernetes_manifest import (
    ServerRun,
    carries_labels,
    document,
    helm_overlay,
    pod_manifest,
    toolbox_manifest,
)
from redline.targets.kubernetes_names import MANAGED_BY, MANAGED_BY_KEY, toolbox_labels, toolbox_name
from redline.targets.kubernetes_spec import KubernetesSpec

POD_FILE = "pod.json"
VALUES_FILE = "values.json"


@dataclass(frozen=True)
class StartPreview:
    """What a start would submit: the commands in order and the documents they read. Nothing was submitted."""

    commands: list[list[str]]
    documents: dict[str, str] = field(default_factory=dict)  # file (or `stdin`) -> its exact text
    note: str = ""

    def text(self) -> str:
        """The commands as a person would type them, then each document."""
        lines = [shlex.join(argv) for argv in self.commands]
        for name, text in self.documents.items():
            lines += [f"--- {name}", text.rstrip("\n")]
        return "\n".join(lines + ([f"# {self.note}"] if self.note else [])) + "\n"


class Deployer:
    """Puts servers of one target on the cluster and takes them off, in its deploy mode."""

    def __init__(self, spec: KubernetesSpec, cluster: Cluster, target: str) -> None:
        self.spec = spec
        self.cluster = cluster
        self.commands = cluster.commands
        self.target = target

    # ---- servers ----------------------------------------------------------------------------------------

    def preview(self, run: ServerRun, local: Path) -> StartPreview:
        """The exact commands and documents submit() would use for run; pure."""
        where = f"pinned to node {run.node}" if run.node else "where the scheduler puts it (pin_node is off)"
        note = f"dry run: nothing was submitted; the pod goes {where}"
        if self.spec.helm is None:
            return StartPreview([self.commands.create()], {"stdin": document(pod_manifest(self.spec, run))}, note)
        values = str(local / VALUES_FILE)
        overlay = document(helm_overlay(self.spec.helm, run))
        return StartPreview([self.commands.helm_install(run.name, values)], {values: overlay}, note)

    async def submit(self, run: ServerRun, local: Path) -> None:
        """Create run's pod, or install its release; the documents are kept in local for the record."""
        if self.spec.helm is None:
            text = document(pod_manifest(self.spec, run))
            (local / POD_FILE).write_text(text)
            done = await self.cluster.call(self.commands.create(), stdin=text.encode())
            done.check(f"creating pod {run.name}")
            return
        values = local / VALUES_FILE
        values.write_text(document(helm_overlay(self.spec.helm, run)))
        done = await self.cluster.call(self.commands.helm_install(run.name, str(values)), timeout_s=300)
        done.check(f"installing release {run.name} of {self.spec.helm.chart}")

    async def remove(self, release: str | None, labels: dict[str, str], grace_s: int = 1) -> None:
        """Uninstall release if redline labelled it, then delete the pods that carry labels."""
        if release is not None and await self._owned(release, labels) is not None:
            uninstalled = await self.cluster.call(self.commands.helm_uninstall(release), timeout_s=300)
            uninstalled.check(f"uninstalling release {release}")
        done = await self.cluster.call(self.commands.delete(labels, grace_s))
        done.check(f"deleting the pods labelled {labels}")

    async def _owned(self, release: str, labels: dict[str, str], *, strict: bool = True) -> bool | None:
        """Whether release's values carry redline's labels (None: no such release). strict: not ours is an error."""
        assert self.spec.helm is not None
        done = await self.cluster.call(self.commands.helm_values(release))
        if done.returncode != 0 and "not found" in done.stderr:
            return None
        values = _parsed(done.check(f"reading the values of release {release}").text)
        ours = {MANAGED_BY_KEY: MANAGED_BY, **labels}
        owned = carries_labels(values, self.spec.helm.labels_path, ours)
        if strict and not owned:
            raise TargetError(
                f"release {release} does not carry redline's labels {ours} at {self.spec.helm.labels_path}: "
                "redline never deletes what it did not label; uninstall it by hand if it is yours"
            )
        return owned

    async def remove_releases(self, labels: dict[str, str]) -> list[str]:
        """Uninstall every release of this target's prefix whose values carry labels; their names."""
        if self.spec.helm is None:
            return []
        listed = (await self.cluster.call(self.commands.helm_list())).check("listing the releases")
        removed = []
        for release in _parsed_list(listed.text):
            name = str(release.get("name", ""))
            if name.startswith(self._prefix) and await self._owned(name, labels, strict=False):
                await self.remove(name, labels)
                removed.append(name)
        return removed

    @property
    def _prefix(self) -> str:
        return f"{self.spec.experiment_prefix}-"

    # ---- the toolbox ------------------------------------------------------------------------------------

    async def toolbox(self, node: str | None, env: dict[str, str]) -> str:
        """The name of this target's running toolbox pod (on node, when pinned), made first if need be."""
        if self.spec.image is None:
            raise TargetError(
                f"target {self.target} runs a command outside a server's pod (a version probe, a model check) in "
                "its toolbox pod, which needs the engine's image: set image: in its targets-file entry"
            )
        name = toolbox_name(self.spec.experiment_prefix, self.target)
        labels = toolbox_labels(self.target)
        pods = await self.cluster.pods(labels)
        for pod in pods:
            state = pod_state(pod, self.spec.container)
            if state.running and not meta(pod).get("deletionTimestamp") and node in (None, state.node):
                return name
        if pods:  # ended, or on another node: make it again
            await self.remove(None, labels)
            await self.cluster.wait_gone(labels, 120, f"toolbox pod {name}")
        text = document(toolbox_manifest(self.spec, name, labels, node, env))
        done = await self.cluster.call(self.commands.create(), stdin=text.encode())
        if done.returncode != 0 and "AlreadyExists" not in done.stderr:  # another redline made it meanwhile
            done.check(f"creating toolbox pod {name}")
        await self._wait_running(name, labels)
        return name

    async def _wait_running(self, name: str, labels: dict[str, str]) -> None:
        end = time.monotonic() + self.spec.pending_deadline_s
        while True:
            pods = await self.cluster.pods(labels)
            state = pod_state(pods[0] if pods else None, self.spec.container)
            if state.running:
                return
            if state.exited or state.stuck or time.monotonic() >= end:
                events = await self.cluster.events(name)
                await self.remove(None, labels)
                why = state.stuck or ("ended" if state.exited else f"Pending past {self.spec.pending_deadline_s:.0f}s")
                raise TargetError(f"toolbox pod {name} {why}; it was deleted. Its events:\n{events}")
            await anyio.sleep(0.5)


def _parsed(text: str) -> Json:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _parsed_list(text: str) -> list[Json]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
