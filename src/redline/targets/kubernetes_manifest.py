"""What redline submits to a cluster, built from the targets-file entry and one run. Pure functions.

    run = ServerRun(name=..., run_id=..., run_dir=..., argv=[...], env={...}, labels=..., node=...)
    pod_manifest(spec, run)            -> the Pod, as `kubectl create -f -` reads it (JSON)
    helm_overlay(spec.helm, run)       -> the values laid over the chart's for this run
    ClusterCommands(spec).create()     -> ["kubectl", "--kubeconfig", ..., "create", "-f", "-"]

The commands are argv lists from start to end: nothing here is ever parsed by a shell.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from redline.errors import InputError
from redline.targets.kubernetes_names import selector
from redline.targets.kubernetes_spec import HelmSpec, KubernetesSpec, Toleration, Volume

RUN_VOLUME = "redline-run"
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class ServerRun:
    """One server about to be deployed: its names, its command and where it is pinned."""

    name: str  # the pod's name (pod mode) or the release's (helm mode)
    run_id: str
    run_dir: str  # inside the pod
    argv: list[str]
    env: dict[str, str]
    labels: dict[str, str]
    cwd: str | None = None
    node: str | None = None


def document(manifest: dict[str, Any]) -> str:
    """The exact text submitted (JSON, which kubectl and helm both read as YAML)."""
    return json.dumps(manifest, indent=2, sort_keys=False) + "\n"


# ---- pods ----------------------------------------------------------------------------------------------------


def _volume(volume: Volume) -> dict[str, Any]:
    if volume.host_path is not None:
        source: dict[str, Any] = {"hostPath": {"path": volume.host_path}}
    elif volume.claim is not None:
        source = {"persistentVolumeClaim": {"claimName": volume.claim, "readOnly": volume.read_only}}
    else:
        source = {"emptyDir": {}}
    return {"name": volume.name, **source}


def _volumes(spec: KubernetesSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts): the run folders' scratch space, /dev/shm when sized, then the entry's own."""
    volumes: list[dict[str, Any]] = [{"name": RUN_VOLUME, "emptyDir": {}}]
    mounts: list[dict[str, Any]] = [{"name": RUN_VOLUME, "mountPath": spec.pod_workdir}]
    if spec.shm_size:
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": spec.shm_size}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    for volume in spec.volumes:
        volumes.append(_volume(volume))
        mounts.append({"name": volume.name, "mountPath": volume.mount_path, "readOnly": volume.read_only})
    return volumes, mounts


def _placement(spec: KubernetesSpec, node: str | None) -> dict[str, Any]:
    """Node selector, tolerations, and the pin: a required node affinity on the node's name, so the scheduler
    still decides (a pod that cannot fit is Pending and reported, never refused by the kubelet as with nodeName)."""
    placement: dict[str, Any] = {}
    if spec.node_selector:
        placement["nodeSelector"] = dict(spec.node_selector)
    if node is not None:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        placement["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    if spec.tolerations:
        placement["tolerations"] = [_toleration(t) for t in spec.tolerations]
    if spec.scheduler_name:
        placement["schedulerName"] = spec.scheduler_name
    return placement


def _toleration(toleration: Toleration) -> dict[str, Any]:
    fields = toleration.model_dump(exclude_none=True)
    if "toleration_seconds" in fields:
        fields["tolerationSeconds"] = fields.pop("toleration_seconds")
    return fields


def _resources(spec: KubernetesSpec, gpus: int) -> dict[str, Any]:
    amounts: dict[str, str] = {}
    if gpus:
        amounts[spec.gpu_resource] = str(gpus)
    if spec.cpu:
        amounts["cpu"] = spec.cpu
    if spec.memory:
        amounts["memory"] = spec.memory
    return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else {}


def _env(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


def _pod(
    spec: KubernetesSpec, name: str, labels: dict[str, str], container: dict[str, Any], node: str | None
) -> dict[str, Any]:
    volumes, mounts = _volumes(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": spec.namespace, "labels": dict(labels)},
        "spec": {
            "restartPolicy": "Never",  # an engine that exits is a finding, not something to restart
            "terminationGracePeriodSeconds": spec.termination_grace_s,
            "enableServiceLinks": False,
            "automountServiceAccountToken": False,  # the engine needs no credentials for the cluster
            **_placement(spec, node),
            "containers": [
                {"name": spec.container, "image": spec.image, "imagePullPolicy": spec.image_pull_policy, **container}
                | {"volumeMounts": mounts}
            ],
            "volumes": volumes,
        },
    }


def pod_manifest(spec: KubernetesSpec, run: ServerRun) -> dict[str, Any]:
    """redline's own pod for one server: the engine's argv as the container's command, the GPUs asked for."""
    container: dict[str, Any] = {"command": list(run.argv), "env": _env(run.env)}
    if run.cwd:
        container["workingDir"] = run.cwd
    resources = _resources(spec, spec.gpus)
    if resources:
        container["resources"] = resources
    return _pod(spec, run.name, run.labels, container, run.node)


def toolbox_manifest(
    spec: KubernetesSpec, name: str, labels: dict[str, str], node: str | None, env: dict[str, str]
) -> dict[str, Any]:
    """A pod of the engine's image that asks for no GPU and sleeps, ending itself after toolbox_lifetime_s:
    where version probes and model checks run while no server does."""
    lifetime = str(spec.toolbox_lifetime_s)
    # An image built for GPUs would otherwise see every GPU of the node through the runtime's default.
    hide = {"NVIDIA_VISIBLE_DEVICES": "void"} if spec.gpu_resource.startswith("nvidia.com/") else {}
    container = {"command": ["sleep", lifetime], "env": _env({**env, **hide})}
    pod = _pod(spec, name, labels, container, node)
    pod["spec"]["activeDeadlineSeconds"] = spec.toolbox_lifetime_s
    pod["spec"]["terminationGracePeriodSeconds"] = 0  # it only sleeps
    return pod


# ---- helm ----------------------------------------------------------------------------------------------------


def set_path(values: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A copy of values with value at `a.b.c`, the maps on the way made as needed; a non-map on the way is refused."""
    result = copy.deepcopy(values)
    here = result
    *parents, last = dotted.split(".")
    for i, key in enumerate(parents):
        child = here.setdefault(key, {})
        if not isinstance(child, dict):
            raise InputError(f"values path {dotted}: {'.'.join(parents[: i + 1])} is not a map in the values")
        here = child
    here[last] = value
    return result


def helm_overlay(helm: HelmSpec, run: ServerRun) -> dict[str, Any]:
    """The values redline lays over the chart's for one run (helm merges maps; a list, like the argv, replaces)."""
    values: dict[str, Any] = {}
    values = set_path(values, helm.argv_path, list(run.argv))
    values = set_path(values, helm.labels_path, dict(run.labels))
    if run.env:
        if helm.env_path is None:
            raise InputError(
                f"this run sets engine env ({', '.join(sorted(run.env))}) but the chart takes none: "
                "set helm.env_path in the targets file to where the chart reads a list of {name, value}"
            )
        values = set_path(values, helm.env_path, _env(run.env))
    if run.node is not None and helm.node_selector_path is not None:
        values = set_path(values, helm.node_selector_path, {HOSTNAME_LABEL: run.node})
    return values


def carries_labels(values: Any, labels_path: str, labels: dict[str, str]) -> bool:
    """True when a release's values hold labels at labels_path: the release is one redline installed."""
    here = values
    for key in labels_path.split("."):
        if not isinstance(here, dict):
            return False
        here = here.get(key)
    return isinstance(here, dict) and all(here.get(k) == v for k, v in labels.items())


# ---- commands ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterCommands:
    """The kubectl and helm argv lists for a target's cluster and namespace, exactly as they are run."""

    spec: KubernetesSpec

    @property
    def kubectl_prefix(self) -> list[str]:
        argv = list(self.spec.kubectl)
        argv += ["--kubeconfig", self.spec.kubeconfig] if self.spec.kubeconfig else []
        argv += ["--context", self.spec.context] if self.spec.context else []
        return argv

    def kubectl(self, *args: str) -> list[str]:
        return [*self.kubectl_prefix, "--namespace", self.spec.namespace, *args]

    def helm(self, *args: str) -> list[str]:
        argv = list(self.spec.helm_command)
        argv += ["--kubeconfig", self.spec.kubeconfig] if self.spec.kubeconfig else []
        argv += ["--kube-context", self.spec.context] if self.spec.context else []
        return [*argv, "--namespace", self.spec.namespace, *args]

    def selector(self, labels: dict[str, str]) -> str:
        """Redline's labels; with managed-by=redline too in pod mode (Helm stamps its own on a chart's objects)."""
        return selector(labels, managed_by=self.spec.helm is None)

    def create(self) -> list[str]:
        """`create`, not `apply`: a name already taken is refused, never patched."""
        return self.kubectl("create", "-f", "-")

    def pods(self, labels: dict[str, str]) -> list[str]:
        return self.kubectl("get", "pods", "-l", self.selector(labels), "-o", "json")

    def pod(self, name: str) -> list[str]:
        return self.kubectl("get", "pod", name, "-o", "json")

    def logs(self, name: str, previous: bool = False) -> list[str]:
        return self.kubectl("logs", name, "-c", self.spec.container, *(["--previous"] if previous else []))

    def exec(self, name: str, argv: list[str]) -> list[str]:
        return self.kubectl("exec", name, "-c", self.spec.container, "--", *argv)

    def delete(self, labels: dict[str, str], grace_s: int) -> list[str]:
        """Delete by label only: what redline did not label is never selected."""
        sel = self.selector(labels)
        return self.kubectl(
            "delete", "pods", "-l", sel, f"--grace-period={grace_s}", "--wait=false", "--ignore-not-found"
        )

    def events(self, name: str) -> list[str]:
        return self.kubectl("get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json")

    def nodes(self) -> list[str]:
        return [*self.kubectl_prefix, "get", "nodes", "-o", "json"]

    def node(self, name: str) -> list[str]:
        return [*self.kubectl_prefix, "get", "node", name, "-o", "json"]

    def all_pods(self) -> list[str]:
        """Every pod of the cluster: the GPUs they request are what a node has left."""
        return [*self.kubectl_prefix, "get", "pods", "--all-namespaces", "-o", "json"]

    def port_forward(self, name: str, port: int) -> list[str]:
        return self.kubectl("port-forward", "--address", "127.0.0.1", f"pod/{name}", f":{port}")

    def helm_install(self, release: str, overlay_file: str) -> list[str]:
        """`install`, not `upgrade --install`: a standing release of that name is refused, never upgraded."""
        helm = self.spec.helm
        assert helm is not None
        argv = ["install", release, helm.chart]
        argv += ["--version", helm.version] if helm.version else []
        argv += ["--values", helm.values_file] if helm.values_file else []
        return self.helm(*argv, "--values", overlay_file)

    def helm_values(self, release: str) -> list[str]:
        return self.helm("get", "values", release, "--output", "json")

    def helm_uninstall(self, release: str) -> list[str]:
        return self.helm("uninstall", release)

    def helm_list(self) -> list[str]:
        return self.helm("list", "--all", "--output", "json")
