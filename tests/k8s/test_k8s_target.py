"""The `kubernetes` target on a real cluster (scripts/k8s-cluster up), with a busybox "engine": a shell that
logs and serves /health with httpd. Real kubectl, helm, pods, logs, port-forwards, scheduling and events.

The vLLM boots, the smoke test and the ladder are in test_k8s_vllm.py.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from redline.errors import TargetBusy, TargetError, TargetPathError
from redline.targets import Launch
from redline.targets.kubernetes import KubernetesTarget
from redline.targets.kubernetes_cluster import PodState
from redline.targets.kubernetes_spec import KubernetesSpec
from tests.conftest import processes_naming
from tests.k8s.conftest import K8sCluster

pytestmark = pytest.mark.anyio

CHART = Path(__file__).resolve().parents[1] / "data" / "k8s" / "chart"
MANAGED = "app.kubernetes.io/managed-by=redline"
OURS = "redline.dev/target=k8s"  # what a chart makes is managed-by Helm, but carries redline's own labels
# A stand-in engine: it logs, then serves /health on 8000 (on every address, so the pod IP reaches it too).
SERVER = [
    "sh",
    "-c",
    'mkdir -p /tmp/www && echo ok >/tmp/www/health && echo "booting $0" && exec httpd -f -p 8000 -h /tmp/www',
    "stand-in",
]
HEALTH = "http://127.0.0.1:8000/health"


def volumes(cluster: K8sCluster, *extra: Path) -> list[dict[str, Any]]:
    """The cluster's hostPath mounts for vLLM's CPU build, plus extra folders (read-write), as volumes: entries."""
    mounts = cluster.mounts([cluster.host_mount(p, read_only=False) for p in extra])
    return [
        {"name": m["name"], "host_path": m["hostPath"], "mount_path": m["mountPath"], "read_only": m["readOnly"]}
        for m in mounts
    ]


def spec_for(cluster: K8sCluster, namespace: str, tmp_path: Path, **changes: Any) -> KubernetesSpec:
    """A targets-file entry for the test cluster, in pod mode unless changed."""
    fields: dict[str, Any] = {
        "kind": "kubernetes",
        "kubeconfig": str(cluster.kubeconfig),
        "context": cluster.context,
        "kubectl": [cluster.kubectl[0]],
        "helm_command": [cluster.helm[0]],
        "namespace": namespace,
        "experiment_prefix": "rt",
        "image": cluster.image,
        "gpus": 0,
        "termination_grace_s": 2,
        "pending_deadline_s": 120,
        "workdir": str(tmp_path / "local"),
    }
    return KubernetesSpec.model_validate({**fields, **changes})


def target_for(cluster: K8sCluster, namespace: str, tmp_path: Path, **changes: Any) -> KubernetesTarget:
    made = KubernetesTarget("k8s", spec_for(cluster, namespace, tmp_path, **changes))
    made.experiment = "test-ladder"
    return made


def pods(cluster: K8sCluster, namespace: str, selector: str = MANAGED) -> list[dict[str, Any]]:
    return json.loads(cluster.run("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout)["items"]


def names(cluster: K8sCluster, namespace: str, selector: str = MANAGED) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods(cluster, namespace, selector))


async def test_a_server_pod_boots_is_read_through_kubectl_and_stops_leaving_nothing(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        t0 = time.monotonic()
        handle = await target.start(SERVER, env={"GREETING": "hi"}, cwd=None, log_path="boot.log", exclusive=True)
        (pod,) = pods(k8s_cluster, k8s_namespace)
        labels = pod["metadata"]["labels"]
        assert pod["metadata"]["name"] == handle.locator.pod == f"rt-test-ladder-{handle.locator.run_id[-8:]}"
        assert (
            labels["redline.dev/experiment"] == "rt-test-ladder" and labels["redline.dev/run"] == handle.locator.run_id
        )
        assert pod["spec"]["containers"][0]["command"] == SERVER

        outcome = await target.wait_ready(handle, HEALTH, 60)
        assert outcome.status == "ready", outcome
        print(f"stand-in pod ready {time.monotonic() - t0:.1f}s after start")
        assert await target.is_alive(handle)
        assert await target.read_text(handle.log_path) == "booting stand-in\n"  # `kubectl logs`

        # a command run for the server runs in its pod (as the bench does), with env and cwd
        result_dir = handle.run_dir
        script = 'echo "$GREETING from $(hostname)" >"$0/result.json"; pwd'
        run = await target.run(
            ["sh", "-c", script, result_dir], env={"GREETING": "hello there"}, cwd="/tmp", server=handle
        )
        assert (run.returncode, run.stdout) == (0, "/tmp\n")
        assert await target.read_text(f"{result_dir}/result.json") == f"hello there from {handle.locator.pod}\n"
        await target.fetch(f"{result_dir}/result.json", str(tmp_path / "fetched.json"))
        assert (tmp_path / "fetched.json").read_text().startswith("hello there")
        failed = await target.run(["sh", "-c", "echo no >&2; exit 3", result_dir], server=handle)
        assert failed.returncode == 3 and "no" in failed.stderr

        found = await target.launched(
            Launch(target="k8s", run_dir=handle.run_dir, log_path=handle.log_path, at=handle.started_at)
        )
        assert found is not None and found.locator == handle.locator

        t1 = time.monotonic()
        await target.stop(handle, grace_s=1)
        print(f"stand-in pod gone {time.monotonic() - t1:.1f}s after stop")
        assert not await target.is_alive(handle)
        assert names(k8s_cluster, k8s_namespace) == []
        assert await target.read_text(handle.log_path) == "booting stand-in\n"  # kept here before it went
        await target.stop(handle, grace_s=1)  # stopping what is gone is not an error


async def test_the_pod_ip_reaches_a_server_listening_on_every_address(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, reach="pod-ip") as target:
        handle = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        try:
            assert (await target.wait_ready(handle, HEALTH, 60)).status == "ready"
            assert target.forwards._open == {}  # no port-forward: straight to the pod's address
        finally:
            await target.stop(handle, grace_s=1)


async def test_an_engine_that_exits_is_exited_with_its_code_and_its_log(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        handle = await target.start(["sh", "-c", "echo cannot fit; exit 3"], env={}, cwd=None, log_path="boot.log")
        outcome = await target.wait_ready(handle, HEALTH, 60)
        assert (outcome.status, outcome.exit_code) == ("exited", 3)
        assert await target.read_text(handle.log_path) == "cannot fit\n"
        assert not await target.is_alive(handle)
        await target.stop(handle, grace_s=1)
        assert names(k8s_cluster, k8s_namespace) == []


async def test_a_pod_that_ends_between_the_look_and_the_forward_is_not_ready_and_the_next_look_says_exited(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    """The race a fast-failing rung hits (a KV cache OOM): wait_ready saw the pod Running, then kubectl refused
    the port-forward ("pod is not running"). The probe says "not ready", never an error, and no forward is kept."""
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        handle = await target.start(["sh", "-c", "exit 3"], env={}, cwd=None, log_path="boot.log")
        assert (await target.wait_ready(handle, HEALTH, 60)).status == "exited"
        pod = handle.locator.pod
        assert await target.forwards.local_port(pod, 8000) is None
        stale = PodState(phase="Running", running=True, name=pod)  # what the look before the forward saw
        assert await target._get(stale, httpx.URL(HEALTH)) is None
        assert target.forwards._open == {} and processes_naming(tmp_path) == []
        outcome = await target.wait_ready(handle, HEALTH, 60)
        assert (outcome.status, outcome.exit_code) == ("exited", 3)
        await target.stop(handle, grace_s=1)


async def test_the_preflight_refuses_what_cannot_fit_with_the_node_table_and_creates_nothing(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path, fake_gpus: Any
) -> None:
    fake_gpus(1)
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, gpus=2) as target:
        with pytest.raises(TargetError) as refused:
            await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
    text = str(refused.value)
    assert "no node can take a pod asking 2 nvidia.com/gpu now" in text
    assert "node          allocatable nvidia.com/gpu  requested  free" in text
    assert f"{k8s_cluster.node}  1 " in text
    assert names(k8s_cluster, k8s_namespace) == []

    async with target_for(k8s_cluster, k8s_namespace, tmp_path, gpus=1) as target:
        first = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        try:
            (pod,) = pods(k8s_cluster, k8s_namespace)
            assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
            assert (await target.wait_ready(first, HEALTH, 60)).status == "ready"
            with pytest.raises(TargetError, match=rf"(?m)^{k8s_cluster.node} +1 +1 +0$"):
                await target.start(SERVER, env={}, cwd=None, log_path="boot.log")  # the first holds the one GPU
        finally:
            await target.stop(first, grace_s=1)
        assert names(k8s_cluster, k8s_namespace) == []


async def test_a_pod_pending_past_its_deadline_is_reported_with_its_events_and_deleted(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    # The preflight counts GPUs only; a memory request no node has keeps the pod Pending in the scheduler.
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, memory="4000Gi", pending_deadline_s=5) as target:
        handle = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        t0 = time.monotonic()
        with pytest.raises(TargetError) as reported:
            await target.wait_ready(handle, HEALTH, 120)
    assert time.monotonic() - t0 < 60
    text = str(reported.value)
    assert f"pod {k8s_namespace}/{handle.locator.pod} on target k8s was still Pending" in text
    assert "it was deleted" in text and "FailedScheduling" in text and "Insufficient memory" in text
    assert names(k8s_cluster, k8s_namespace) == []


async def test_an_image_the_node_may_not_pull_is_reported_at_once(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    changes = {"image": "localhost/not-there:v1", "image_pull_policy": "Never"}
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, **changes) as target:
        handle = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        with pytest.raises(TargetError, match=r"(?s)ErrImageNeverPull.*it was deleted.*Its events"):
            await target.wait_ready(handle, HEALTH, 120)
    assert names(k8s_cluster, k8s_namespace) == []


async def test_one_exclusive_server_at_a_time_and_several_when_not_exclusive(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        first = await target.start(SERVER, env={}, cwd=None, log_path="boot.log", exclusive=True)
        with pytest.raises(TargetBusy, match=f"pod {k8s_namespace}/{first.locator.pod}"):
            await target.start(SERVER, env={}, cwd=None, log_path="boot.log", exclusive=True)
        others = [await target.start(SERVER, env={}, cwd=None, log_path="boot.log") for _ in range(2)]
        assert len(names(k8s_cluster, k8s_namespace)) == 3  # each start is its own pod
        for handle in [first, *others]:
            assert (await target.wait_ready(handle, HEALTH, 60)).status == "ready"
        assert len(target.forwards._open) == 3  # one forward per pod, each to its own pod's 8000
        assert await target.teardown() and names(k8s_cluster, k8s_namespace) == []


async def test_teardown_is_by_label_leaves_nothing_and_nothing_it_did_not_label(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    foreign = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "rt-test-ladder-00000000", "labels": {"app": "not-redlines"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "engine", "image": k8s_cluster.image, "command": ["sleep", "600"]}],
        },
    }
    k8s_cluster.apply(foreign, k8s_namespace)
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        a = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        target.experiment = "other-campaign"
        b = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        assert (await target.run(["true"])).returncode == 0  # a command naming no run: in the toolbox pod
        assert names(k8s_cluster, k8s_namespace) == sorted([a.locator.pod, b.locator.pod, "rt-tools-k8s"])

        assert await target.teardown("test-ladder") == [a.locator.pod]
        assert names(k8s_cluster, k8s_namespace) == sorted([b.locator.pod, "rt-tools-k8s"])
        assert sorted(await target.teardown()) == sorted([b.locator.pod, "rt-tools-k8s"])
    assert names(k8s_cluster, k8s_namespace) == []
    assert names(k8s_cluster, k8s_namespace, "app") == ["rt-test-ladder-00000000"]  # never labelled, never touched


async def test_a_dry_run_submits_nothing_and_shows_exactly_what_start_submits(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path, fake_gpus: Any
) -> None:
    fake_gpus(1)
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, gpus=1) as target:
        run_dir = target.new_run_dir()
        preview = await target.preview_start(SERVER, env={"A": "1"}, run_dir=run_dir, exclusive=True)
        assert names(k8s_cluster, k8s_namespace) == [] and not (tmp_path / "local").exists()
        print(preview.text())
        # the command, run by hand as printed, creates what start would have
        (create,) = preview.commands
        subprocess.run(create, input=preview.documents["stdin"], text=True, check=True, capture_output=True)
        (pod,) = pods(k8s_cluster, k8s_namespace)
        assert pod["metadata"]["name"] == f"rt-test-ladder-{run_dir[-8:]}"
        assert pod["spec"]["containers"][0]["command"] == SERVER
        assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
        assert pod["spec"]["nodeName"] == k8s_cluster.node
        # with the GPU taken, a dry run is refused as the start would be: by the preflight, submitting nothing
        with pytest.raises(TargetError, match="no node can take a pod asking 1 nvidia.com/gpu"):
            await target.preview_start(SERVER, env={}, exclusive=True)
        assert await target.teardown() == [pod["metadata"]["name"]]


async def test_host_info_is_the_pinned_node_and_its_machine_id(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    node = k8s_cluster.get("node", k8s_cluster.node)
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        host = await target.host_info()
        assert (host.hostname, host.machine_id) == (k8s_cluster.node, node["status"]["nodeInfo"]["machineID"])
        assert host.gpus == []  # no feature-discovery labels on this node: no GPU model is claimed
        assert target.node == k8s_cluster.node  # every later pod of this target goes there
        handle = await target.start(SERVER, env={}, cwd=None, log_path="boot.log")
        (pod,) = pods(k8s_cluster, k8s_namespace)
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [k8s_cluster.node]
        await target.stop(handle, grace_s=1)


def helm_values(cluster: K8sCluster, tmp_path: Path) -> Path:
    """The user's own values file for the test chart: the image and nothing else."""
    path = tmp_path / "values.yaml"
    path.write_text(json.dumps({"server": {"image": cluster.image, "terminationGracePeriodSeconds": 1}}))
    return path


def helm_entry(cluster: K8sCluster, tmp_path: Path) -> dict[str, Any]:
    return {
        "deploy": "helm",
        "helm": {
            "chart": str(CHART),
            "values_file": str(helm_values(cluster, tmp_path)),
            "argv_path": "server.command",
            "labels_path": "server.podLabels",
            "env_path": "server.env",
            "node_selector_path": "server.nodeSelector",
        },
    }


def releases(cluster: K8sCluster, namespace: str) -> list[str]:
    listed = subprocess.run(
        [*cluster.helm, "list", "--all", "-n", namespace, "-o", "json"], capture_output=True, text=True, check=True
    )
    return sorted(r["name"] for r in json.loads(listed.stdout))


async def test_k8s_routing_a_path_naming_another_runs_folder_runs_in_the_toolbox_not_its_pod(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    """Issue 19, class 6: a second session (another target) names the first one's run folder in a command's argv
    (a model path, as `test -e` checks it): the command runs in the toolbox, never in that run's pod, and the
    run's files are not read from its pod."""
    async with target_for(k8s_cluster, k8s_namespace, tmp_path / "a") as first:
        theirs = await first.start(SERVER, env={}, cwd=None, log_path="boot.log")
        assert (await first.wait_ready(theirs, HEALTH, 60)).status == "ready"
        async with target_for(k8s_cluster, k8s_namespace, tmp_path / "b") as second:
            run = await second.run(["sh", "-c", 'hostname; test -e "$0"', f"{theirs.run_dir}/model"])
            assert run.stdout.strip() == "rt-tools-k8s" and run.returncode != 0  # the toolbox has no such folder
            with pytest.raises(TargetPathError):
                await second.read_text(theirs.log_path)
        ours = await first.run(["sh", "-c", "hostname"], server=theirs)  # the session that started it: its pod
        assert ours.stdout.strip() == theirs.locator.pod
        await first.teardown()
    assert names(k8s_cluster, k8s_namespace) == []


async def test_helm_mode_installs_the_chart_with_the_argv_in_its_values_and_uninstalls_it(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, **helm_entry(k8s_cluster, tmp_path)) as target:
        handle = await target.start(SERVER, env={"GREETING": "hi"}, cwd=None, log_path="boot.log", exclusive=True)
        release = handle.locator.release
        assert release == handle.locator.pod == f"rt-test-ladder-{handle.locator.run_id[-8:]}"
        assert releases(k8s_cluster, k8s_namespace) == [release]
        (pod,) = pods(k8s_cluster, k8s_namespace, OURS)
        assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"  # Helm's, over redline's
        assert pod["spec"]["containers"][0]["command"] == SERVER  # from the values, through the chart
        assert pod["spec"]["containers"][0]["env"] == [{"name": "GREETING", "value": "hi"}]
        assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": k8s_cluster.node}
        assert (await target.wait_ready(handle, HEALTH, 60)).status == "ready"
        assert await target.read_text(handle.log_path) == "booting stand-in\n"
        run = await target.run(
            ["sh", "-c", 'echo "$GREETING" >"$0/r.txt"', handle.run_dir], env={"GREETING": "yo"}, server=handle
        )
        assert run.returncode == 0 and await target.read_text(f"{handle.run_dir}/r.txt") == "yo\n"
        await target.stop(handle, grace_s=1)
        assert releases(k8s_cluster, k8s_namespace) == [] and names(k8s_cluster, k8s_namespace, OURS) == []


async def test_helm_mode_never_uninstalls_a_release_it_did_not_label(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    mine = "rt-test-ladder-11111111"  # a name of redline's shape, but installed by a person: no labels
    subprocess.run(
        [
            *k8s_cluster.helm,
            "install",
            mine,
            str(CHART),
            "-n",
            k8s_namespace,
            "-f",
            str(helm_values(k8s_cluster, tmp_path)),
        ],
        capture_output=True,
        check=True,
    )
    async with target_for(k8s_cluster, k8s_namespace, tmp_path, **helm_entry(k8s_cluster, tmp_path)) as target:
        with pytest.raises(TargetError, match="never deletes what it did not label"):
            await target.deployer.remove(mine, {"redline.dev/run": "20261201T120000Z-11111111"})
        assert await target.teardown() == []
    assert releases(k8s_cluster, k8s_namespace) == [mine]


async def test_an_ab_dry_run_shows_what_each_arm_would_submit_and_submits_nothing(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path
) -> None:
    from redline.models.ab import AbSpec
    from redline.ops.ab.run import ab_run

    serve = {"model": "/models/qwen", "max_model_len": 4096, "load_format": "dummy"}
    spec = AbSpec.model_validate(
        {
            "name": "seqs",
            "target": "k8s",
            "baseline": "a",
            "arms": [{"name": "a", "serve": serve | {"max_num_seqs": 8}}, {"name": "b", "serve": serve}],
            "workload": {"input_len": 64, "output_len": 16},
            "concurrencies": [4],
        }
    )
    async with target_for(k8s_cluster, k8s_namespace, tmp_path) as target:
        result = await ab_run(tmp_path / "ws", spec, target, i_understand_this_submits_jobs=False, dry_run=True)
    assert result.plan is not None and names(k8s_cluster, k8s_namespace, "") == []  # not even a toolbox pod
    for arm in result.plan.arms:
        assert arm.submits is not None and " create -f -" in arm.submits.splitlines()[0]
        pod = json.loads(arm.submits.split("--- stdin\n", 1)[1].split("\n# ", 1)[0])
        assert pod["spec"]["containers"][0]["command"] == arm.boot_command
        assert pod["metadata"]["labels"]["redline.dev/experiment"] == "rt-seqs"
