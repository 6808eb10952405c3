"""Reading a cluster's state (pure), on JSON a real cluster printed: `kubectl get -o json` of pods, nodes and
events, captured from the v1.20 test cluster (tests/data/k8s/). all-pods.json and nodes.json are one moment:
a node with 2 fake nvidia.com/gpu, two pods holding one each, two more Pending unscheduled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from redline.targets import GpuInfo
from redline.targets.kubernetes_cluster import (
    NodeRoom,
    choose_node,
    events_text,
    host_of,
    newest,
    node_rooms,
    node_table,
    pod_request,
    pod_state,
)
from redline.targets.kubernetes_spec import Toleration

DATA = Path(__file__).resolve().parents[1] / "data" / "k8s"
GPU = "nvidia.com/gpu"


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def test_a_running_pod_is_running_with_its_ip_and_node() -> None:
    state = pod_state(load("pod-bb.json"), "engine")
    assert (state.phase, state.running, state.exited, state.pending) == ("Running", True, False, False)
    assert state.pod_ip == "10.251.0.3" and state.node == "redline-node" and state.name == "bb"
    assert state.labels["app.kubernetes.io/managed-by"] == "redline"


def test_a_failed_pod_has_exited_with_its_code() -> None:
    state = pod_state(load("pod-failed.json"), "engine")
    assert (state.phase, state.exited, state.exit_code, state.running) == ("Failed", True, 3, False)


def test_an_image_that_policy_forbids_pulling_is_stuck_not_pending_forever() -> None:
    state = pod_state(load("pod-neverpull.json"), "engine")
    assert state.pending and not state.exited
    assert (
        state.stuck
        == 'ErrImageNeverPull: Container image "localhost/not-there:v9" is not present with pull policy of Never'
    )


def test_an_unschedulable_pod_is_pending_without_a_node() -> None:
    state = pod_state(load("pod-unschedulable.json"), "c")
    assert state.pending and state.node is None and state.stuck is None and state.pod_ip is None


def test_a_pod_that_is_gone_has_exited() -> None:
    state = pod_state(None, "engine")
    assert state.gone and state.exited and not state.pending


def test_a_restarted_container_counts_as_exited_with_its_first_exit_code() -> None:
    pod = load("pod-bb.json")  # a chart's Deployment restarts a crashed engine: its first life is the boot
    status = pod["status"]["containerStatuses"][0]
    status["restartCount"] = 1
    status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    state = pod_state(pod, "engine")
    assert state.exited and state.exit_code == 1 and not state.running and state.restarts == 1


def test_newest_prefers_a_live_pod_over_one_being_deleted() -> None:
    old, new = load("pod-bb.json"), load("pod-bb.json")
    old["metadata"].update(name="old", creationTimestamp="2026-12-01T04:00:00Z")
    new["metadata"].update(
        name="new", creationTimestamp="2026-12-01T05:00:00Z", deletionTimestamp="2026-12-01T05:01:00Z"
    )
    assert newest({"items": [old, new]})["metadata"]["name"] == "old"
    assert newest({"items": []}) is None


def test_events_read_as_lines_oldest_first() -> None:
    text = events_text(load("events-unschedulable.json"))
    assert text.splitlines() == [
        "2026-12-01T04:52:08.855784Z Warning FailedScheduling: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        "2026-12-01T04:52:10.904048Z Warning FailedScheduling (x2): 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
    ]
    assert "Warning ErrImageNeverPull (x2): Container image" in events_text(load("events-neverpull.json"))
    assert events_text({"items": []}) == "(no events)"


def test_free_gpus_are_allocatable_minus_what_scheduled_unfinished_pods_request() -> None:
    (room,) = node_rooms(load("nodes.json"), load("all-pods.json"), GPU)
    # two Running pods hold one GPU each; the two Pending ones are not on the node; the Failed one ended
    assert room == NodeRoom("redline-node", allocatable=2, requested=2, excluded=None)
    assert room.free == 0
    assert choose_node([room], 1) is None
    assert choose_node([room], 0) == "redline-node"


def test_a_pod_request_is_its_containers_sum_or_its_largest_init_container() -> None:
    pod = {"spec": {"containers": [{"resources": {"limits": {GPU: "2"}}}, {"resources": {"requests": {GPU: "1"}}}]}}
    assert pod_request(pod, GPU) == 3
    pod["spec"]["initContainers"] = [{"resources": {"limits": {GPU: "4"}}}]
    assert pod_request(pod, GPU) == 4
    assert pod_request(load("pod-bb.json"), GPU) == 0


def _node(name: str, gpus: str, **changes: Any) -> dict[str, Any]:
    node = load("nodes.json")["items"][0]
    node["metadata"]["name"] = name
    node["status"]["allocatable"][GPU] = gpus
    for key, value in changes.items():
        node["spec" if key in ("unschedulable", "taints") else "metadata"][key] = value
    return node


def test_nodes_a_pod_may_not_use_say_why_and_the_most_free_wins() -> None:
    nodes = {
        "items": [
            _node("a", "8"),
            _node("b", "8", unschedulable=True),
            _node("c", "8", taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]),
            _node("d", "4"),
        ]
    }
    rooms = node_rooms(nodes, {"items": []}, GPU)
    assert [(r.name, r.excluded) for r in rooms] == [
        ("a", None),
        ("b", "cordoned"),
        ("c", "taint nvidia.com/gpu=:NoSchedule not tolerated"),
        ("d", None),
    ]
    assert choose_node(rooms, 8) == "a"
    tolerated = node_rooms(nodes, {"items": []}, GPU, tolerations=[Toleration(key="nvidia.com/gpu", operator="Exists")])
    assert [r.excluded for r in tolerated][2] is None
    pinned = node_rooms(nodes, {"items": []}, GPU, pinned="d")
    assert choose_node(pinned, 8) is None and choose_node(pinned, 4) == "d"
    selected = node_rooms(nodes, {"items": []}, GPU, selector={"gpu": "h200"})
    assert selected[0].excluded == "lacks gpu=h200"


def test_the_node_table_shows_allocatable_requested_free_and_why() -> None:
    rooms = [NodeRoom("gpu-1", 8, 8), NodeRoom("gpu-22", 8, 7, "cordoned")]
    assert node_table(rooms, GPU).splitlines() == [
        "node    allocatable nvidia.com/gpu  requested  free  note",
        "gpu-1   8                           8          0",
        "gpu-22  8                           7          1     cordoned",
    ]


@pytest.mark.parametrize(
    ("labels", "gpus"),
    [
        ({}, []),
        (
            {"nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/gpu.memory": "143771"},
            [GpuInfo(name="NVIDIA-H200", memory_mib=143771)] * 2,
        ),
    ],
)
def test_a_node_as_a_host_names_itself_and_the_gpus_its_labels_name(
    labels: dict[str, str], gpus: list[GpuInfo]
) -> None:
    node = load("nodes.json")["items"][0]
    node["metadata"]["labels"].update(labels)
    host = host_of(node, 2)
    assert host.hostname == "redline-node"
    assert (
        host.machine_id == "3d1219c7c4c5404aaa1f6d2a48adfda4"
    )  # the node's /etc/machine-id, as the kubelet reports it
    assert host.gpus == gpus
