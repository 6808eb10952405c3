"""The `kubernetes` entry of a targets file: both deploy modes read, bad entries refused (pure; no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.errors import TargetConfigError
from redline.targets import load_targets, open_target
from redline.targets.kubernetes import KubernetesTarget
from redline.targets.kubernetes_spec import KubernetesSpec, Toleration

POD_MODE = """
targets:
  h200s:
    kind: kubernetes
    kubeconfig: kube/config
    context: gpu-cluster
    namespace: llm-bench
    experiment_prefix: rl
    image: vllm/vllm-openai:v0.11.0
    gpus: 2
    cpu: "16"
    memory: 128Gi
    shm_size: 16Gi
    node_selector: {nvidia.com/gpu.product: NVIDIA-H200}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    volumes:
      - {name: models, host_path: /data/models, mount_path: /models, read_only: true}
      - {name: hf-cache, claim: hf-cache, mount_path: /root/.cache/huggingface}
    reach: pod-ip
    engine_commands: {vllm: [vllm]}
    env: {HF_HUB_OFFLINE: "1"}
"""

HELM_MODE = """
targets:
  chart:
    kind: kubernetes
    namespace: llm-bench
    deploy: helm
    image: vllm/vllm-openai:v0.11.0
    gpus: 1
    helm:
      chart: ./charts/vllm
      values_file: charts/vllm/values-h200.yaml
      argv_path: server.command
      labels_path: server.podLabels
      env_path: server.env
      node_selector_path: server.nodeSelector
"""


def _load(tmp_path: Path, text: str) -> dict[str, KubernetesSpec]:
    path = tmp_path / "targets.yml"
    path.write_text(text)
    return load_targets(path)  # type: ignore[return-value]


def test_a_pod_mode_entry_reads_with_its_paths_from_the_file(tmp_path: Path) -> None:
    specs = _load(tmp_path, POD_MODE)
    spec = specs["h200s"]
    assert spec.kubeconfig == str(tmp_path / "kube" / "config")
    assert spec.deploy == "pod" and spec.gpus == 2 and spec.reach == "pod-ip"
    assert spec.volumes[0].host_path == "/data/models" and spec.volumes[1].claim == "hf-cache"
    target = open_target("h200s", specs)
    assert isinstance(target, KubernetesTarget)
    assert target.workdir == "/tmp/redline"  # paths of this target are paths inside its pods
    assert target.engine_command("vllm", ["x"]) == ["vllm"]


def test_a_helm_mode_entry_reads_with_the_chart_and_values_from_the_file(tmp_path: Path) -> None:
    spec = _load(tmp_path, HELM_MODE)["chart"]
    assert spec.helm is not None
    assert spec.helm.chart == str(tmp_path / "charts" / "vllm")
    assert spec.helm.values_file == str(tmp_path / "charts" / "vllm" / "values-h200.yaml")
    assert spec.helm.argv_path == "server.command"
    assert spec.reach == "port-forward"  # the default: works whatever address the server binds


def test_a_chart_from_a_repository_is_left_as_named(tmp_path: Path) -> None:
    text = HELM_MODE.replace("./charts/vllm", "oci://registry.example.com/charts/vllm")
    assert _load(tmp_path, text)["chart"].helm.chart == "oci://registry.example.com/charts/vllm"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (("    image: vllm/vllm-openai:v0.11.0\n", ""), "needs the engine's image"),
        (("namespace: llm-bench", "namespace: LLM_bench"), "namespace"),
        (("experiment_prefix: rl", "experiment_prefix: -rl"), "experiment_prefix"),
        (("gpus: 2", "gpus: -1"), "gpus"),
        (("memory: 128Gi", "memory: lots"), "memory"),
        (("reach: pod-ip", "reach: service"), "reach"),
        (("claim: hf-cache, ", "claim: hf-cache, host_path: /x, "), "exactly one of"),
        (("name: models,", "name: Models,"), "name"),
        (("mount_path: /models", "mount_path: models"), "mount_path"),
        (("{nvidia.com/gpu.product: NVIDIA-H200}", "{'bad key!': x}"), "label rules"),
        (("context: gpu-cluster", "context: --exec=evil"), "context"),
        (("gpus: 2", "gpus: 2\n    gpu_resource: gpu"), "extended resource"),
        (("gpus: 2", "gpus: 2\n    unknown: 1"), "unknown"),
        (("gpus: 2", "gpus: 2\n    node: Node_1"), "node name"),
    ],
)
def test_a_bad_pod_mode_entry_is_refused(tmp_path: Path, change: tuple[str, str], complaint: str) -> None:
    old, new = change
    assert old in POD_MODE
    with pytest.raises(TargetConfigError, match=complaint):
        _load(tmp_path, POD_MODE.replace(old, new))


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (("    deploy: helm\n", ""), "needs deploy: helm"),
        (("      argv_path: server.command\n", ""), "argv_path"),
        (("labels_path: server.podLabels", "labels_path: server..podLabels"), "labels_path"),
        (("chart: ./charts/vllm", "chart: --post-renderer=x"), "chart"),
    ],
)
def test_a_bad_helm_mode_entry_is_refused(tmp_path: Path, change: tuple[str, str], complaint: str) -> None:
    old, new = change
    assert old in HELM_MODE
    with pytest.raises(TargetConfigError, match=complaint):
        _load(tmp_path, HELM_MODE.replace(old, new))


def test_deploy_helm_without_its_entry_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a helm: entry"):
        KubernetesSpec(kind="kubernetes", deploy="helm", image="x")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, {"key": "nvidia.com/gpu", "effect": "NoSchedule"}, True),
        ({"key": "gpu", "value": "h200"}, {"key": "gpu", "value": "h200", "effect": "NoSchedule"}, True),
        ({"key": "gpu", "value": "h100"}, {"key": "gpu", "value": "h200", "effect": "NoSchedule"}, False),
        ({"operator": "Exists"}, {"key": "anything", "effect": "NoExecute"}, True),
        ({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, {"key": "gpu", "effect": "NoSchedule"}, False),
    ],
)
def test_tolerations_match_taints_as_kubernetes_does(
    toleration: dict[str, str], taint: dict[str, str], tolerated: bool
) -> None:
    assert Toleration.model_validate(toleration).tolerates(taint) is tolerated
