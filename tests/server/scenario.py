"""One pass over every tool, the same through any transport: the in-process client, a
`redline mcp` subprocess on stdio, and one over HTTP. Uses the doubling policy, which
smoke-tests every rung, so that every tool has real work to do; then a small campaign
(2 cells x 2 concurrencies on the fake engine) through every campaign tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.rigor.scenario import VERDICT_TOOLS, exercise_evidence_tools
from tests.server.helpers import (
    H200,
    KV_TOKENS,
    LLAMA8B,
    Env,
    call,
    call_error,
    fake_servers,
    free_port,
    hand_run_log,
    init_args,
    write_targets,
)

CAMPAIGN_TOOLS = {
    "campaign_init",
    "campaign_plan",
    "campaign_run",
    "campaign_status",
    "campaign_aggregate",
    "champion_select",
    "campaign_report",
}
EVERY_TOOL = {
    "ladder_init",
    "ladder_status",
    "ladder_next_rung",
    "rung_run",
    "rung_record",
    "smoke_test",
    "ceiling_record",
    "ladder_adopt",
    "parse_boot_log",
    "job_status",
    "job_cancel",
    "job_list",
    "memory_predict",
    *CAMPAIGN_TOOLS,
    *VERDICT_TOOLS,
}
LADDER = "ladders/l8b.yml"
CLIMBED = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"
CAMPAIGN = "campaigns/c1.yml"


def bench_json(model: str, *, input_len: int, output_len: int, concurrency: int = 1, prompts: int = 2) -> str:
    """A `vllm bench serve --save-result` file (the real H200 one) rewritten for a hand-run smoke test."""
    data = json.loads((H200 / "bench_l8b_c16.json").read_text())
    data.update(
        model_id=model,
        num_prompts=prompts,
        completed=prompts,
        failed=0,
        max_concurrency=concurrency,
        total_input_tokens=prompts * input_len,
        total_output_tokens=prompts * output_len,
    )
    return json.dumps(data)


async def exercise_every_tool(client: Client, env: Env) -> set[str]:
    """Call each tool at least once, on its success path where the climb allows; the names called."""
    called: set[str] = set()

    async def ok(tool: str, **args: Any) -> dict[str, Any]:
        called.add(tool)
        return await call(client, tool, **args)

    async def err(tool: str, **args: Any) -> str:
        called.add(tool)
        return await call_error(client, tool, **args)

    signals = await ok("parse_boot_log", text=(H200 / "l8b_32k.log").read_text())
    assert (signals["status"], signals["kv_cache_tokens"], signals["max_concurrency"]) == ("boot_ok", 896912, 27.37)
    predicted = await ok(  # the same boot, predicted: the shipped corpus holds it, so it is its own anchor
        "memory_predict",
        model=str(LLAMA8B),
        gpu_name="NVIDIA H200",
        gpu_memory_gib=140.4,
        engine_version="0.26.0",
        max_model_len=32768,
        max_num_batched_tokens=8192,
    )
    assert predicted["provenance"] == "predicted" and abs(predicted["kv_cache_tokens"] - 896912) <= 32  # 0.01 GiB

    ladder = await ok("ladder_init", **init_args(LADDER, policy="doubling", fixed={"port": env.port}))
    assert ladder["fixed"]["port"] == env.port and ladder["fixed"]["gpu_memory_utilization"] == 0.9
    assert ladder["model"]["max_position_embeddings"] == 131072  # read from the model's config.json
    status = await ok("ladder_status", ladder=LADDER)
    assert status["rows"] == [] and status["next"]["route"] == "run_rung" and status["path"] == LADDER
    step = await ok("ladder_next_rung", ladder=LADDER)
    assert (step["rung"]["max_model_len"], step["rung"]["max_num_batched_tokens"]) == (32768, 8192)

    # a boot on the target, then its smoke test: both jobs that finish within the call
    booted = await ok("rung_run", ladder=LADDER, target="local", wait_s=60)
    assert booted["done"] and booted["state"] == "succeeded", booted
    rung = booted["result"]["rung"]
    assert rung["index"] == 1 and rung["status"] == "boot_ok" and rung["signals"]["kv_cache_tokens"] == KV_TOKENS
    assert booted["result"]["next"]["route"] == "smoke_test"
    smoked = await ok("smoke_test", ladder=LADDER, wait_s=60)
    assert smoked["state"] == "succeeded" and smoked["result"]["rung"]["smoke_test"]["outcome"] == "pass", smoked
    assert smoked["result"]["next"]["route"] == "run_rung"
    assert smoked["result"]["next"]["rung"]["max_model_len"] == 65536

    jobs = (await ok("job_list"))["jobs"]
    assert [(j["tool"], j["state"]) for j in jobs] == [("smoke_test", "succeeded"), ("rung_run", "succeeded")]
    status = await ok("job_status", job_id=booted["job_id"])
    assert status["done"] and status["result"] == booted["result"]

    # a boot that outlasts its wait: a job id back, then cancelled, and its server with it
    write_targets(env, FAKE_VLLM_BOOT_S="30")
    running = await ok("rung_run", ladder=LADDER, target="local", wait_s=1)
    assert not running["done"] and running["state"] == "running" and "job_status" in running["hint"]
    assert fake_servers(env.port), "the slow boot should be up"
    cancelled = await ok("job_cancel", job_id=running["job_id"])
    assert cancelled["state"] == "cancelled" and cancelled["error"].startswith("cancelled by job_cancel")
    for _ in range(50):
        if not fake_servers(env.port):
            break
        await anyio.sleep(0.1)
    assert not fake_servers(env.port)
    write_targets(env)

    # a boot and a smoke test a person ran by hand, recorded from a pasted log and a workspace file
    step = await ok("ladder_next_rung", ladder=LADDER)
    recorded = await ok("rung_record", ladder=LADDER, log_text=hand_run_log(step["command"], env))
    assert recorded["rung"]["index"] == 2 and recorded["rung"]["serve"]["max_model_len"] == 65536
    assert recorded["next"]["route"] == "smoke_test"
    w = recorded["next"]["smoke"]
    (env.workspace / "logs").mkdir()
    (env.workspace / "logs" / "smoke-2.json").write_text(
        bench_json(str(ladder["model"]["path"]), input_len=w["input_len"], output_len=w["output_len"])
    )
    smoke = await ok("rung_record", ladder=LADDER, bench_file="logs/smoke-2.json")
    assert smoke["rung"]["smoke_test"]["outcome"] == "pass" and smoke["next"]["route"] == "run_rung"

    assert "the climb is not over" in await err("ceiling_record", ladder=LADDER)

    # a ladder climbed elsewhere (the real H200 climb), copied in rather than climbed again
    shutil.copytree(CLIMBED.parent, env.workspace / "imports" / "llama8b")
    adopted = await ok("ladder_adopt", source="imports/llama8b/ladder.yml", name="llama8b-h200")
    assert adopted["path"] == "ladders/llama8b-h200.yml" and adopted["next"]["route"] == "done"
    assert len(adopted["files"]) == 6 and adopted["ceiling"]["max_model_len"] == 131072
    await exercise_experiment_tools(ok, err)
    await exercise_evidence_tools(ok, err)
    assert called == EVERY_TOOL
    return called


def campaign_spec(port: int, **changes: Any) -> dict[str, Any]:
    """Two values of max_num_batched_tokens at concurrencies 1 and 4, on the fake engine."""
    return {
        "name": "c1",
        "target": "local",
        "model": str(LLAMA8B),
        "base": {"max_model_len": 4096, "port": port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "warmup_requests": 2,
        "grid": {"max_num_batched_tokens": [2048, 8192]},
        **changes,
    }


async def exercise_experiment_tools(ok: Any, err: Any) -> None:
    """Every campaign tool once: init, the dry run, the ack gate, a run (2 cells, then a replicate boot of each: the
    measured noise band), then the views and the report."""
    written = await ok("campaign_init", campaign=CAMPAIGN, spec=campaign_spec(free_port()))
    assert written["name"] == "c1" and written["base"]["max_model_len"] == 4096
    assert [c["serve"]["max_num_batched_tokens"] for c in written["plan"]["cells"]] == [2048, 8192]
    plan = await ok("campaign_plan", campaign=CAMPAIGN)
    assert (plan["boots"], plan["benches"], plan["baseline"]) == (2, 4, "mnbt2048")
    assert "pass i_understand_this_submits_jobs=true" in await err("campaign_run", campaign=CAMPAIGN)
    ran = await ok("campaign_run", campaign=CAMPAIGN, i_understand_this_submits_jobs=True, wait_s=120)
    assert ran["state"] == "succeeded" and ran["result"]["boots"] == 4, ran
    assert [(c["replicate"], c["verdict"]) for c in ran["result"]["ran"]] == [(1, "green")] * 2 + [(2, "green")] * 2
    assert "noise band" in ran["result"]["reason"] and "measured" in ran["result"]["reason"]
    status = await ok("campaign_status", campaign=CAMPAIGN)
    assert (status["done"], status["green"], status["running"]) == (2, 2, [])
    table = await ok("campaign_aggregate", campaign=CAMPAIGN)
    assert [(r["cell"], r["concurrency"]) for r in table["rows"]] == [
        ("mnbt2048", 1),
        ("mnbt2048", 4),
        ("mnbt8192", 1),
        ("mnbt8192", 4),
    ]
    champion = await ok("champion_select", campaign=CAMPAIGN, top=2)
    assert champion["rigor"] == "DRAFT" and champion["outcome"] in ("improvement", "no_improvement")
    report = await ok("campaign_report", campaign=CAMPAIGN)
    assert report["report"].endswith("campaigns/c1/report.md") and len(report["plots"]) == 3
