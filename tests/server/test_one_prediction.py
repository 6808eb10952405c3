"""One question, one answer (issue 34, item 1): llama8b on an H200, vLLM 0.26.0, eager, 8,192 / 8,192 batched
tokens, asked of every tool that predicts memory, in a workspace whose ladder recorded a real floor boot of the model
(tests/data/vllm-0.26.0-h200-predict): memory_predict over MCP, `redline predict` at the CLI, the ladder's joint plan
(ladder_init and rung_record over MCP), the campaign's and the A/B's plans (the function both plans call). Each
gives the same KV tokens, band, reserved tokens and concurrency: one function answers them all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.cli import main
from redline.engines import get_engine
from redline.models.memory import gpu_spec
from redline.models.serve import ServeConfig
from redline.models.shape import shape_of
from redline.ops.evidence.known_good_apply import Identity
from redline.ops.experiment.predicted import engine_observations, predicted_for
from redline.server.app import build_server
from redline.targets import GpuInfo, HostInfo
from tests.server.helpers import LLAMA8B, Env, call

FLOOR = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-predict" / "llama8b" / "ladder.runs"
GPU = {"gpu_name": "NVIDIA H200", "gpu_memory_gib": 140.4}
H200_SPEC = gpu_spec("NVIDIA H200", 140.4)
ASKED = {"engine_version": "0.26.0", "max_model_len": 8192, "max_num_batched_tokens": 8192, "enforce_eager": True}
pytestmark = pytest.mark.anyio
KEYS = ("kv_cache_tokens", "kv_cache_tokens_low", "kv_cache_tokens_high", "reserved_tokens", "band_gib")


def answer(found: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(found[k] for k in KEYS) + (round(found["max_concurrency"], 2),)


async def test_every_tool_gives_one_answer_to_one_question(env: Env, capsys) -> None:  # noqa: ANN001
    async with Client(build_server(env.config)) as client:
        ladder = {"ladder": "ladders/l8b.yml"}
        fixed = {"enforce_eager": True, "load_format": "dummy"}
        await call(
            client,
            "ladder_init",
            **ladder,
            model="llama8b",
            model_path="/models/llama8b",  # the GPU host's folder: the shape comes from the file given at record
            floor_max_model_len=8192,
            floor_max_num_batched_tokens=2048,
            min_concurrency=16,
            engine_version="0.26.0",
            fixed=fixed,
            **GPU,
        )
        (env.workspace / "config.json").write_text((LLAMA8B / "config.json").read_text())
        floor = (FLOOR / "rung-001" / "boot.log").read_text()
        await call(client, "rung_record", **ladder, log_text=floor, model_config_file="config.json")
        joint = (await call(client, "ladder_status", **ladder))["ladder"]["joint"]
        mcp = await call(client, "memory_predict", model=str(LLAMA8B), **GPU, **ASKED)
    assert joint["max_num_batched_tokens"] == 8192

    capsys.readouterr()
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in {**GPU, **ASKED}.items() if v is not True]
    argv = ["predict", "--model", str(LLAMA8B), *flags, "--enforce-eager", "--workspace", str(env.workspace)]
    assert main([*argv, "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)

    shape, _ = shape_of(json.loads((LLAMA8B / "config.json").read_text()))
    host = HostInfo(hostname="h200", gpus=[GpuInfo(name="NVIDIA H200", memory_mib=143_771)])
    serve = ServeConfig(model="/models/llama8b", max_model_len=8192, max_num_batched_tokens=8192, enforce_eager=True)
    boots = engine_observations("vllm", env.workspace)
    plan = predicted_for("vllm", serve, shape, Identity("h200", "0.26.0", host=host), boots, needed=16 * 8192)
    assert plan is not None

    assert answer(mcp) == answer(cli) == answer(plan.model_dump())
    assert answer(mcp)[:-1] == answer(joint["predicted"])[:-1]  # the one KV cache
    # its max_concurrency at the max_model_len the plan boots, as memory_predict says it there (issue 40: before, the
    # plan kept the floor's, 109.72x at 8,192 tokens, for a rung of 16 requests of its own length)
    held = get_engine("vllm").memory_model().concurrency(mcp["kv_cache_tokens"], joint["max_model_len"], H200_SPEC)
    assert joint["predicted"]["max_concurrency"] == held and int(held) == 16
    assert mcp["anchored_on"] == cli["anchored_on"] is not None  # the same recorded boot anchors every answer
