"""Issue 19, class 6: the Kubernetes target runs each command only where redline placed it.

A command goes to the pod of a server this target started (or was handed the handle of by redline) only when
redline runs it for that server (`server=`, as a bench is); any other command, whatever its argv or cwd names
(a model path `<pod_workdir>/runs/<another run>/...`), goes to the toolbox pod, and a file of a run this target
does not know is read in the toolbox, never from that run's pod. No cluster: tests/targets/fake_kubectl.py, a
real child process, stands in for kubectl and writes down every command it was given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.errors import InputError, TargetPathError
from redline.ops.evidence.context import model_files
from redline.ops.session import ServeSession
from redline.targets import ServerHandle
from redline.targets.base import PodLocator
from redline.targets.kubernetes import KubernetesTarget
from redline.targets.kubernetes_spec import KubernetesSpec

pytestmark = pytest.mark.anyio

FAKE_KUBECTL = Path(__file__).resolve().parent / "fake_kubectl.py"
OTHER = "20261201T120000Z-0badf00d"  # a run another session started: its pod is run-0badf00d
OTHER_DIR = f"/tmp/redline/runs/{OTHER}"
TOOLBOX = "rl-tools-k8s"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "kubectl.log"
    monkeypatch.setenv("FAKE_KUBECTL_LOG", str(path))
    return path


def target(tmp_path: Path) -> KubernetesTarget:
    spec = KubernetesSpec.model_validate(
        {
            "kind": "kubernetes",
            "namespace": "bench",
            "experiment_prefix": "rl",
            "image": "busybox",
            "gpus": 0,
            "node": "node-1",
            "workdir": str(tmp_path / "local"),
            "kubectl": [sys.executable, str(FAKE_KUBECTL)],
        }
    )
    made = KubernetesTarget("k8s", spec)
    made.experiment = "qwen"
    return made


def execs(log: Path) -> list[tuple[str, list[str]]]:
    """(pod, argv) of every `kubectl exec` the target ran, but the run folders it made."""
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    found = [(c[1], c[c.index("--") + 1 :]) for c in calls if c[:1] == ["exec"]]
    return [(pod, argv) for pod, argv in found if argv[:2] != ["mkdir", "-p"]]


async def test_k8s_routing_a_model_path_naming_another_runs_folder_is_checked_in_the_toolbox(
    tmp_path: Path, log: Path
) -> None:
    t = target(tmp_path)
    session = ServeSession(t, get_engine("vllm"))
    await session.check_model_path(f"{OTHER_DIR}/model")  # `test -e` on the model path (ops/session.py)
    await t.run(["ls", OTHER_DIR, f"--result-dir={OTHER_DIR}", "--result-dir", OTHER_DIR], cwd=OTHER_DIR)
    ran = execs(log)
    assert ran[0] == (TOOLBOX, ["test", "-e", f"{OTHER_DIR}/model"])
    assert [pod for pod, _ in ran] == [TOOLBOX, TOOLBOX]  # never run-0badf00d, whatever the argv or cwd names


async def test_k8s_routing_another_runs_files_are_read_in_the_toolbox_never_from_its_pod(
    tmp_path: Path, log: Path
) -> None:
    t = target(tmp_path)
    kept = tmp_path / "local" / "runs" / OTHER / "model" / "config.json"  # a copy on this machine, of another run
    kept.parent.mkdir(parents=True)
    kept.write_text('{"secret": 1}')
    files = await model_files(t, f"{OTHER_DIR}/model")  # what campaign_run and ab_run read of the model
    assert files.config_hash is None and "cannot read" in files.why
    with pytest.raises(TargetPathError):
        await t.read_text(f"{OTHER_DIR}/model/config.json")
    assert [pod for pod, _ in execs(log)] == [TOOLBOX, TOOLBOX]


async def test_k8s_routing_a_bench_runs_in_the_pod_of_the_server_it_is_for(tmp_path: Path, log: Path) -> None:
    t = target(tmp_path)
    handle = await t.start(["vllm", "serve", "/models/m"], env={}, cwd=None, log_path="boot.log")
    mine = handle.locator.run_id  # type: ignore[union-attr]
    await t.run(["vllm", "bench", "serve", "--model", f"{OTHER_DIR}/m", "--result-dir", handle.run_dir], server=handle)
    await t.run(["vllm", "bench", "serve", "--result-dir", handle.run_dir])  # not for a server: the toolbox
    assert [pod for pod, _ in execs(log)] == [f"run-{mine[-8:]}", TOOLBOX]
    with pytest.raises(TargetPathError):  # its own run's file is read from its own pod (no such file there)
        await t.read_text(f"{handle.run_dir}/result.json")
    assert execs(log)[-1][0] == f"run-{mine[-8:]}"


async def test_k8s_routing_a_handle_of_another_target_is_refused(tmp_path: Path, log: Path) -> None:
    t = target(tmp_path)
    locator = PodLocator(namespace="bench", pod="run-0badf00d", run_id=OTHER, experiment="rl-x", release=None)
    foreign = ServerHandle(
        target="other",
        run_dir=OTHER_DIR,
        log_path=f"{OTHER_DIR}/boot.log",
        started_at="2026-12-01T12:00:00+00:00",
        locator=locator,
    )
    with pytest.raises(InputError, match="belongs to target 'other'"):
        await t.run(["true"], server=foreign)
    assert execs(log) == []
