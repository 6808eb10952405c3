"""Slurm-on-Kubernetes (issue 23, item 6): a `kubernetes` target names the scheduler a Slurm-managed pool needs,
and its preflight refuses a default-scheduler GPU pod on a node Slurm manages, which would double-book its GPUs.
Pure: node JSON as a real v1.20 cluster printed it (tests/data/k8s), the manifest, the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.errors import TargetConfigError
from redline.targets import load_targets
from redline.targets.kubernetes_cluster import choose_node, node_rooms, node_table
from redline.targets.kubernetes_manifest import pod_manifest
from redline.targets.kubernetes_spec import KubernetesSpec
from tests.targets.test_kubernetes_cluster import GPU, _node
from tests.targets.test_kubernetes_manifest import run

SLURM = {"slinky.slurm.net/managed": "true"}


def spec(**changes: object) -> KubernetesSpec:
    return KubernetesSpec.model_validate({"kind": "kubernetes", "image": "vllm/vllm-openai:v0.11.0", **changes})


def test_a_default_scheduler_gpu_pod_is_refused_on_nodes_slurm_manages_with_the_reason_in_the_node_table() -> None:
    nodes = {"items": [_node("slurm-1", "8", labels={**SLURM}), _node("plain-1", "4", labels={})]}
    guard = spec(slurm_node_labels=SLURM).slurm_guard
    assert guard == SLURM
    rooms = node_rooms(nodes, {"items": []}, GPU, slurm=guard)
    assert choose_node(rooms, 8) is None and choose_node(rooms, 4) == "plain-1"  # the Slurm node is out
    assert "managed by Slurm: a GPU pod of the default scheduler would double-book it (set scheduler_name)" in (
        node_table(rooms, GPU)
    )


def test_naming_the_pools_scheduler_lifts_the_rule_and_the_pod_carries_it() -> None:
    named = spec(slurm_node_labels=SLURM, scheduler_name="slurm-bridge-scheduler")
    assert named.slurm_guard is None  # Slurm's own scheduler places the pod: no double booking
    assert spec(slurm_node_labels=SLURM, scheduler_name="default-scheduler").slurm_guard == SLURM
    assert spec(slurm_node_labels=SLURM, gpus=0).slurm_guard is None  # no GPU asked, none double-booked
    assert pod_manifest(named, run())["spec"]["schedulerName"] == "slurm-bridge-scheduler"
    assert "schedulerName" not in pod_manifest(spec(), run())["spec"]


@pytest.mark.parametrize(
    "bad", [{"scheduler_name": "Bad Name"}, {"slurm_node_labels": {"bad key!": "x"}}, {"slurm_scheduler": "x"}]
)
def test_bad_slurm_pool_settings_are_refused(bad: dict[str, object], tmp_path: Path) -> None:
    path = tmp_path / "targets.yml"
    path.write_text(json.dumps({"targets": {"k": {"kind": "kubernetes", "image": "x", **bad}}}))
    with pytest.raises(TargetConfigError, match=next(iter(bad))):
        load_targets(path)
