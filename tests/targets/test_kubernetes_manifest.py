"""What redline submits to a cluster: the pod, the toolbox, the Helm overlay and the exact argv (pure)."""

from __future__ import annotations

import json

import pytest

from redline.errors import InputError
from redline.targets.kubernetes_manifest import (
    ClusterCommands,
    ServerRun,
    carries_labels,
    document,
    helm_overlay,
    pod_manifest,
    set_path,
    toolbox_manifest,
)
from redline.targets.kubernetes_names import labels_of, toolbox_labels
from redline.targets.kubernetes_spec import HelmSpec, KubernetesSpec

RUN_ID = "20261201T120000Z-1a2b3c4d"
ARGV = ["vllm", "serve", "/models/qwen", "--port", "8000", "--max-model-len", "32768"]


def spec(**changes: object) -> KubernetesSpec:
    fields: dict[str, object] = {
        "kind": "kubernetes",
        "namespace": "bench",
        "experiment_prefix": "rl",
        "image": "vllm/vllm-openai:v0.11.0",
        "gpus": 2,
        "volumes": [{"name": "models", "host_path": "/data/models", "mount_path": "/models", "read_only": True}],
    }
    return KubernetesSpec.model_validate({**fields, **changes})


def run(node: str | None = "gpu-7", env: dict[str, str] | None = None) -> ServerRun:
    labels = labels_of("rl", "ladder", "k8s", RUN_ID, log_name="boot.log", exclusive=True)
    return ServerRun(
        name="rl-ladder-1a2b3c4d",
        run_id=RUN_ID,
        run_dir=f"/tmp/redline/runs/{RUN_ID}",
        argv=list(ARGV),
        env={"HF_HUB_OFFLINE": "1"} if env is None else env,
        labels=labels,
        node=node,
    )


def test_the_server_pod_runs_the_engine_argv_with_its_labels_and_gpus() -> None:
    pod = pod_manifest(spec(cpu="8", memory="64Gi"), run())
    meta, body = pod["metadata"], pod["spec"]
    (container,) = body["containers"]
    assert meta["name"] == "rl-ladder-1a2b3c4d" and meta["namespace"] == "bench"
    assert meta["labels"]["app.kubernetes.io/managed-by"] == "redline"
    assert meta["labels"]["redline.dev/experiment"] == "rl-ladder"
    assert container["command"] == ARGV  # the argv itself: no shell between it and the engine
    assert container["env"] == [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    assert container["resources"] == {
        "requests": {"nvidia.com/gpu": "2", "cpu": "8", "memory": "64Gi"},
        "limits": {"nvidia.com/gpu": "2", "cpu": "8", "memory": "64Gi"},
    }
    assert body["restartPolicy"] == "Never"
    assert body["automountServiceAccountToken"] is False


def test_a_pin_is_a_required_affinity_on_the_node_name_so_the_scheduler_still_decides() -> None:
    body = pod_manifest(spec(), run(node="gpu-7"))["spec"]
    terms = body["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}]}]
    assert "nodeName" not in body
    assert "affinity" not in pod_manifest(spec(), run(node=None))["spec"]


def test_placement_and_volumes_come_from_the_entry() -> None:
    made = spec(
        node_selector={"nvidia.com/gpu.product": "NVIDIA-H200"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "toleration_seconds": 60}],
        shm_size="16Gi",
        volumes=[
            {"name": "models", "host_path": "/data/models", "mount_path": "/models", "read_only": True},
            {"name": "cache", "claim": "hf-cache", "mount_path": "/root/.cache"},
        ],
    )
    body = pod_manifest(made, run())["spec"]
    assert body["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H200"}
    assert body["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}
    ]
    assert body["volumes"] == [
        {"name": "redline-run", "emptyDir": {}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        {"name": "models", "hostPath": {"path": "/data/models"}},
        {"name": "cache", "persistentVolumeClaim": {"claimName": "hf-cache", "readOnly": False}},
    ]
    assert body["containers"][0]["volumeMounts"] == [
        {"name": "redline-run", "mountPath": "/tmp/redline"},
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "models", "mountPath": "/models", "readOnly": True},
        {"name": "cache", "mountPath": "/root/.cache", "readOnly": False},
    ]


def test_a_cpu_pod_asks_for_no_resources() -> None:
    assert "resources" not in pod_manifest(spec(gpus=0), run())["spec"]["containers"][0]


def test_the_toolbox_asks_for_no_gpu_sees_none_and_ends_itself() -> None:
    pod = toolbox_manifest(spec(), "rl-tools-k8s", toolbox_labels("k8s"), "gpu-7", {"HF_HUB_OFFLINE": "1"})
    (container,) = pod["spec"]["containers"]
    assert "resources" not in container
    assert container["command"] == ["sleep", "3600"]
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in container["env"]
    assert pod["spec"]["activeDeadlineSeconds"] == 3600
    assert pod["metadata"]["labels"]["redline.dev/role"] == "toolbox"
    assert container["volumeMounts"][1]["mountPath"] == "/models"  # the models, to check a path is there


def test_the_document_is_the_json_submitted() -> None:
    pod = pod_manifest(spec(), run())
    assert json.loads(document(pod)) == pod


HELM = HelmSpec(
    chart="/charts/vllm",
    values_file="/charts/vllm/values.yaml",
    argv_path="server.command",
    labels_path="server.podLabels",
    env_path="server.env",
    node_selector_path="server.nodeSelector",
)


def test_the_helm_overlay_puts_argv_labels_env_and_pin_at_their_paths() -> None:
    values = helm_overlay(HELM, run())
    assert values["server"]["command"] == ARGV
    assert values["server"]["podLabels"]["redline.dev/run"] == RUN_ID
    assert values["server"]["env"] == [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    assert values["server"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-7"}
    assert carries_labels(values, "server.podLabels", {"app.kubernetes.io/managed-by": "redline"})
    assert not carries_labels(values, "server.podLabels", {"redline.dev/run": "another"})
    assert not carries_labels({"server": []}, "server.podLabels", {})


def test_env_for_a_chart_that_takes_none_is_refused_not_dropped() -> None:
    bare = HELM.model_copy(update={"env_path": None})
    with pytest.raises(InputError, match="helm.env_path"):
        helm_overlay(bare, run())
    assert "env" not in helm_overlay(bare, run(env={}))["server"]


def test_set_path_makes_maps_and_refuses_to_go_through_a_value() -> None:
    base = {"a": {"keep": 1}}
    assert set_path(base, "a.b.c", [1]) == {"a": {"keep": 1, "b": {"c": [1]}}}
    assert base == {"a": {"keep": 1}}  # a copy: the caller's values are left alone
    with pytest.raises(InputError, match="a.keep is not a map"):
        set_path(base, "a.keep.x", 1)


def test_commands_name_the_kubeconfig_context_and_namespace_and_create_rather_than_apply() -> None:
    commands = ClusterCommands(spec(kubeconfig="/k/config", context="gpu", kubectl=["/usr/bin/kubectl"]))
    assert commands.create() == [
        "/usr/bin/kubectl", "--kubeconfig", "/k/config", "--context", "gpu", "--namespace", "bench", "create", "-f", "-",
    ]  # fmt: skip
    assert commands.nodes() == [
        "/usr/bin/kubectl",
        "--kubeconfig",
        "/k/config",
        "--context",
        "gpu",
        "get",
        "nodes",
        "-o",
        "json",
    ]
    helm = ClusterCommands(spec(deploy="helm", helm=HELM, kubeconfig="/k/config", context="gpu"))
    assert helm.helm_install("rl-ladder-1a2b3c4d", "/w/values.json") == [
        "helm", "--kubeconfig", "/k/config", "--kube-context", "gpu", "--namespace", "bench",
        "install", "rl-ladder-1a2b3c4d", "/charts/vllm",
        "--values", "/charts/vllm/values.yaml", "--values", "/w/values.json",
    ]  # fmt: skip


def test_deletion_selects_by_label_only() -> None:
    argv = ClusterCommands(spec()).delete({"redline.dev/run": RUN_ID}, 30)
    assert argv[argv.index("-l") + 1] == f"app.kubernetes.io/managed-by=redline,redline.dev/run={RUN_ID}"
    assert "--grace-period=30" in argv and "--ignore-not-found" in argv
    assert not any(word.startswith("rl-") for word in argv)  # no name: only what carries the labels
