"""The Kubernetes target before it talks to a cluster: the dry-run preview, its handle, and which pod a
path or a command belongs to. Nothing here runs kubectl: the kubectl named is one that does not exist,
so any call would fail the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.errors import InputError, TargetConfigError
from redline.targets import ServerHandle
from redline.targets.base import PodLocator
from redline.targets.kubernetes import KubernetesTarget
from redline.targets.kubernetes_spec import KubernetesSpec

pytestmark = pytest.mark.anyio

RUN_ID = "20261201T120000Z-1a2b3c4d"
RUN_DIR = f"/tmp/redline/runs/{RUN_ID}"
ARGV = ["vllm", "serve", "/models/qwen", "--port", "8000"]


def target(tmp_path: Path, **changes: object) -> KubernetesTarget:
    fields: dict[str, object] = {
        "kind": "kubernetes",
        "namespace": "bench",
        "experiment_prefix": "rl",
        "image": "busybox",
        "gpus": 1,
        "workdir": str(tmp_path / "local"),
        "kubectl": [str(tmp_path / "no-kubectl")],
        "helm_command": [str(tmp_path / "no-helm")],
    }
    made = KubernetesTarget("k8s", KubernetesSpec.model_validate({**fields, **changes}))
    made.experiment = "qwen-ceiling"
    return made


async def test_the_pod_preview_is_the_exact_create_and_manifest_and_submits_nothing(tmp_path: Path) -> None:
    t = target(tmp_path, node="gpu-7", gpus=0)  # no GPU to check, a node named: the preview reads nothing either
    preview = await t.preview_start(ARGV, env={"A": "1"}, run_dir=RUN_DIR)
    no_kubectl = str(tmp_path / "no-kubectl")
    assert preview.commands == [[no_kubectl, "--namespace", "bench", "create", "-f", "-"]]
    pod = json.loads(preview.documents["stdin"])
    assert pod["metadata"]["name"] == "rl-qwen-ceiling-1a2b3c4d"
    assert pod["metadata"]["labels"]["redline.dev/experiment"] == "rl-qwen-ceiling"
    assert pod["spec"]["containers"][0]["command"] == ARGV
    assert pod["spec"]["affinity"]["nodeAffinity"]  # pinned, as start would pin it
    text = preview.text()
    assert f"{no_kubectl} --namespace bench create -f -" in text and '"command": [' in text
    assert "nothing was submitted; the pod goes pinned to node gpu-7" in text
    assert not (tmp_path / "local").exists()  # not even a local file was written


async def test_the_helm_preview_names_the_release_and_its_overlay(tmp_path: Path) -> None:
    helm = {"chart": "/charts/vllm", "argv_path": "server.command", "labels_path": "server.podLabels"}
    t = target(tmp_path, deploy="helm", helm=helm, gpus=0, pin_node=False)
    preview = await t.preview_start(ARGV, env={}, run_dir=RUN_DIR)
    overlay = str(tmp_path / "local" / "runs" / RUN_ID / "values.json")
    (install,) = preview.commands
    assert install[install.index("install") + 1] == "rl-qwen-ceiling-1a2b3c4d"
    assert install[-2:] == ["--values", overlay]
    values = json.loads(preview.documents[overlay])
    assert values["server"]["command"] == ARGV
    assert values["server"]["podLabels"]["redline.dev/release"] == "rl-qwen-ceiling-1a2b3c4d"


async def test_start_refuses_bad_input_before_any_call(tmp_path: Path) -> None:
    t = target(tmp_path)  # asks a GPU: any call would be the preflight's, to a kubectl that is not there
    with pytest.raises(InputError, match="not a run folder"):
        await t.start(ARGV, env={}, cwd=None, log_path="boot.log", run_dir="/elsewhere/runs/" + RUN_ID)
    with pytest.raises(InputError, match="environment names"):
        await t.preview_start(ARGV, env={"BAD NAME": "x"}, run_dir=RUN_DIR)
    with pytest.raises(InputError, match="argv"):
        await t.preview_start([], env={}, run_dir=RUN_DIR)
    with pytest.raises(InputError, match="plain file name"):
        await t.start(ARGV, env={}, cwd=None, log_path="../boot.log", run_dir=RUN_DIR)


def test_a_path_in_a_run_folder_names_its_run_and_nothing_leads_out(tmp_path: Path) -> None:
    t = target(tmp_path)
    assert t.folders.of(f"{RUN_DIR}/boot.log") == (RUN_ID, "boot.log")
    assert t.folders.of(f"{RUN_DIR}/sub/result.json") == (RUN_ID, "sub/result.json")
    assert t.folders.of(f"{RUN_DIR}/../../../etc/passwd") is None  # read inside a pod, never from the local copies
    assert t.folders.of("/models/qwen/config.json") is None
    assert t.folders.of("/tmp/redline/runs/not-a-run/x") is None
    assert t.folders.named(RUN_DIR) == RUN_ID  # `--result-dir RUN_DIR`: the bench runs in that run's pod
    assert t.folders.named("--result-dir") is None


def test_a_pod_handle_round_trips_and_another_kinds_is_refused(tmp_path: Path) -> None:
    locator = PodLocator(
        namespace="bench", pod="rl-x-1a2b3c4d", run_id=RUN_ID, experiment="rl-x", release="rl-x-1a2b3c4d"
    )
    handle = ServerHandle(
        target="k8s",
        run_dir=RUN_DIR,
        log_path=f"{RUN_DIR}/boot.log",
        started_at="2026-12-01T12:00:00+00:00",
        locator=locator,
    )
    assert ServerHandle.model_validate_json(handle.model_dump_json()) == handle
    assert handle.describe() == "pod bench/rl-x-1a2b3c4d (helm release rl-x-1a2b3c4d)"
    t = target(tmp_path)
    assert t._locator(handle) == locator
    posix = ServerHandle.model_validate({**handle.model_dump(), "locator": {"kind": "posix", "pid": 42, "pgid": 42}})
    with pytest.raises(InputError, match="is not a pod"):
        t._locator(posix)
    with pytest.raises(InputError, match="belongs to target"):
        target(tmp_path)._locator(handle.model_copy(update={"target": "other"}))


async def test_an_experiment_stays_on_the_node_it_was_pinned_to_across_targets(tmp_path: Path) -> None:
    pins = tmp_path / "local" / "pins"
    pins.mkdir(parents=True)
    (pins / "rl-qwen-ceiling").write_text("gpu-7\n")  # what an earlier redline process picked for the experiment
    assert await target(tmp_path).place(need_room=False) == "gpu-7"  # no call: the pin is the answer
    other = target(tmp_path)
    other.experiment = "another-ladder"
    with pytest.raises(TargetConfigError, match="is not installed"):  # no pin: it would ask the cluster
        await other.place(need_room=False)
    (pins / "rl-qwen-ceiling").write_text("not a node name!\n")
    with pytest.raises(TargetConfigError):
        await target(tmp_path).place(need_room=False)  # a bad pin file is ignored, not trusted


async def test_a_ladder_rung_on_a_cluster_target_needs_the_acknowledgement(tmp_path: Path) -> None:
    from redline.ops.ladder.plan import ladder_init
    from redline.ops.ladder.rung import climb, rung_run
    from redline.ops.requests import LadderInitRequest

    ladder = tmp_path / "qwen.yml"
    ladder_init(
        ladder,
        LadderInitRequest(
            model="qwen", model_path="/models/qwen", floor_max_model_len=4096, floor_max_num_batched_tokens=2048
        ),
    )
    before = ladder.read_text()
    for run in (rung_run(ladder, target(tmp_path)), climb(ladder, target(tmp_path))):
        with pytest.raises(InputError, match="submits jobs to a cluster.*i_understand_this_submits_jobs=true"):
            await run  # refused before any kubectl call (the kubectl named does not exist)
    assert ladder.read_text() == before and not (tmp_path / "qwen.runs").exists()


async def test_dev_mode_a_helm_target_without_env_path_boots_benches_with_no_env_and_says_how_they_stay_clean(
    tmp_path: Path,
) -> None:
    """Issue 38, item 6: a chart that takes no env runs campaigns and A/Bs again: dev mode is off on a kubernetes target
    (its port is forwarded to redline's host), so a server whose benches follow asks the chart for no env."""
    from redline.engines import get_engine
    from redline.models import ServeConfig
    from redline.ops.session import ServeSession

    helm = {"chart": "/charts/vllm", "argv_path": "server.command", "labels_path": "server.podLabels"}
    t = target(tmp_path, deploy="helm", helm=helm, gpus=0, pin_node=False)
    session = ServeSession(t, get_engine("vllm"))
    config = ServeConfig(model="/models/qwen", max_model_len=4096)
    assert session.launch_env(config, benches=True) == {}
    preview = await session.submission_preview(config)  # what a campaign's or A/B's dry run shows: no refusal
    assert preview is not None and "VLLM_SERVER_DEV_MODE" not in preview
    emptied, said = await session.empty_prefix_cache(
        ServerHandle(
            target="k8s",
            run_dir=RUN_DIR,
            log_path=f"{RUN_DIR}/boot.log",
            started_at="2026-12-01T12:00:00+00:00",
            locator=PodLocator(namespace="bench", pod="p", run_id=RUN_ID),
        ),
        config,
    )
    assert not emptied and said.startswith("not emptied before the bench (VLLM_SERVER_DEV_MODE=1 is off: target k8s's")
    with pytest.raises(InputError, match="this run sets engine env .* but the chart takes none"):
        await t.preview_start(ARGV, env={"VLLM_SERVER_DEV_MODE": "1"}, run_dir=RUN_DIR)  # as every run did before
