"""Issue 19, classes 1, 7, 9 and 10, through the real MCP server (in-process, and over stdio for the bomb):
plan-size bombs refused from the lever lengths, bench results as untrusted input, report.md escaping what it
interpolates, and one campaign name per results folder."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from redline.models.campaign import MAX_BENCHES, MAX_CELLS
from redline.ops.campaign.report import code, md
from redline.server.app import build_server
from tests.campaign.helpers import verdict, write_verdict
from tests.server.helpers import Env, call, call_error, free_port, hand_run_log, new_ladder
from tests.server.scenario import CAMPAIGN, bench_json, campaign_spec

pytestmark = pytest.mark.anyio
LEVERS_32 = {
    "engine": ["vllm"] * 32,
    "max_num_batched_tokens": list(range(1, 33)),
    "max_num_seqs": list(range(1, 33)),
    "kv_cache_dtype": [f"fp{i}" for i in range(32)],
    "enforce_eager": [True, False] * 16,
    "cudagraph_mode": ["FULL"] * 32,
    "enable_chunked_prefill": [True, False] * 16,
    "enable_prefix_caching": [True, False] * 16,
    "extra_flags": [[f"--block-size={i}"] for i in range(32)],
}
BOMB_LINE = "32 x 32 x 32 x 32 x 32 x 32 x 32 x 32 x 32 values make 35,184,372,088,832 cells, over the 256"
READERS = ("campaign_plan", "campaign_status", "campaign_aggregate", "champion_select", "campaign_report")


def bomb_spec() -> dict[str, Any]:
    return campaign_spec(free_port(), grid=LEVERS_32)


def write_yaml(env: Env, rel: str, doc: dict[str, Any]) -> Path:
    path = env.workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


# ---- class 1: plan-size bombs -----------------------------------------------------------------------------


async def test_plan_size_bomb_a_32_to_the_9_grid_is_refused_at_init_in_milliseconds(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        start = time.perf_counter()
        message = await call_error(client, "campaign_init", campaign=CAMPAIGN, spec=bomb_spec())
        assert time.perf_counter() - start < 1.0
    assert BOMB_LINE in message and "grid" in message
    assert not (env.workspace / CAMPAIGN).exists()


async def test_plan_size_bomb_a_file_on_disk_is_refused_by_every_reader_the_same_way(env: Env) -> None:
    write_yaml(env, CAMPAIGN, bomb_spec())
    async with Client(build_server(env.config)) as client:
        for tool in READERS:
            start = time.perf_counter()
            message = await call_error(client, tool, campaign=CAMPAIGN)
            assert time.perf_counter() - start < 1.0, tool
            assert BOMB_LINE in message, (tool, message)
        message = await call_error(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
        assert BOMB_LINE in message
    assert not (env.workspace / "campaigns" / "c1").exists()  # nothing planned, nothing written


async def test_plan_size_bomb_cells_times_concurrencies_times_trials_is_capped(env: Env) -> None:
    grid = {"max_num_batched_tokens": list(range(1, 17)), "max_num_seqs": list(range(1, 17))}  # 256 cells: allowed
    spec = campaign_spec(free_port(), grid=grid, concurrencies=list(range(1, 10)))
    async with Client(build_server(env.config)) as client:
        message = await call_error(client, "campaign_init", campaign=CAMPAIGN, spec=spec)
        assert (
            f"concurrencies: 256 cells x 9 concurrencies x 1 repeats make 2,304 benches, over the {MAX_BENCHES:,}"
            in (message)
        )
        named = [{"name": f"n{i}"} for i in range(MAX_CELLS + 1)]
        message = await call_error(
            client, "campaign_init", campaign=CAMPAIGN, spec={**spec, "grid": None, "cells": named}
        )
        assert f"cells: 257 cells (named and grid), over the {MAX_CELLS}" in message


async def test_plan_size_bomb_an_ab_of_too_many_benches_is_refused(env: Env) -> None:
    serve = {"model": "/m", "max_model_len": 4096, "port": free_port()}
    spec = {
        "name": "ab1",
        "target": "local",
        "arms": [{"name": f"a{i}", "serve": serve | {"max_num_seqs": i + 1}} for i in range(8)],
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": list(range(1, 17)),
        "trials": 20,
    }
    async with Client(build_server(env.config)) as client:
        start = time.perf_counter()
        message = await call_error(client, "ab_run", spec=spec, dry_run=True)
        assert time.perf_counter() - start < 1.0
    assert "trials: 8 arms x 20 trials x 16 concurrencies make 2,560 benches, over the 2,048" in message


async def test_plan_size_bomb_over_stdio(env: Env) -> None:
    write_yaml(env, CAMPAIGN, bomb_spec())
    argv = [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params) as client:
        assert BOMB_LINE in await call_error(client, "campaign_plan", campaign=CAMPAIGN)
        assert BOMB_LINE in await call_error(client, "campaign_init", campaign="campaigns/c2.yml", spec=bomb_spec())


# ---- class 7: bench results are untrusted ---------------------------------------------------------------------


HOSTILE_FIGURES = [
    ("median_ttft_ms", "NaN", "finite number"),
    ("output_throughput", "Infinity", "finite number"),
    ("median_tpot_ms", "-1.5", "must not be negative"),
    ("request_throughput", "-Infinity", "finite number"),
    ("p99_itl_ms", "1e300", "past any real bench"),
    ("total_output_tokens", "9" * 30, "past any real bench"),
    ("completed", "-2", "must not be negative"),
]


@pytest.mark.parametrize(("field", "value", "words"), HOSTILE_FIGURES)
async def test_bench_result_untrusted_rung_record_refuses_it_naming_the_field(
    env: Env, field: str, value: str, words: str
) -> None:
    async with Client(build_server(env.config)) as client:
        ladder = await new_ladder(client, env)
        step = await call(client, "ladder_next_rung", ladder="ladders/l8b.yml")
        recorded = await call(
            client, "rung_record", ladder="ladders/l8b.yml", log_text=hand_run_log(step["command"], env)
        )
        assert recorded["rung"]["index"] == 1
        data = json.loads(bench_json(str(ladder["model"]["path"]), input_len=128, output_len=16))
        data.pop(field, None)
        hostile = json.dumps(data)[:-1] + f', "{field}": {value}}}'
        assert json.loads(hostile)[field] is not None
        before = (env.workspace / "ladders" / "l8b.yml").read_text()
        message = await call_error(client, "rung_record", ladder="ladders/l8b.yml", bench_json_text=hostile)
    assert f"{field} is" in message and words in message, message
    assert (env.workspace / "ladders" / "l8b.yml").read_text() == before  # nothing recorded


# ---- class 9: report.md escapes what it interpolates ------------------------------------------------------------

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> [click](https://evil.example) ![p](http://e/x.png) www.evil.example `code` *b* | x\n# H"


def live(text: str) -> list[str]:
    """What of a markdown text would be live HTML, a link, an image, an autolink, a heading or a table cell break."""
    patterns = [r"<script", r"<img", r"(?<!\\)\]\(", r"(?<!\\)://", r"www\.", r"\n# H", r"(?<!\\)\| x"]
    return [p for p in patterns if re.search(p, text)]


def test_report_escapes_md_leaves_nothing_live() -> None:
    assert live(HOSTILE) and not live(md(HOSTILE))
    assert md("host vm (machine ?, GPUs 0003dc9a)") == "host vm (machine ?, GPUs 0003dc9a)"  # plain text stays
    assert code("/models/llama-8b") == "`/models/llama-8b`"  # a plain name or path stays inline code
    assert code("a`</code><script>") == md("a`</code><script>") and not live(code(HOSTILE))  # never breaks out


async def test_report_escapes_hostile_model_gpu_gate_and_reason_names(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=campaign_spec(free_port()))
        results = env.workspace / "campaigns" / "c1"
        for cell, levers, tpot in (("mnbt2048", 2048, 40.0), ("mnbt8192", 8192, 42.0)):
            v = verdict(cell, {1: tpot, 4: tpot}, reason=HOSTILE)
            ctx = v.context
            ctx = ctx.model_copy(
                update={
                    "model": ctx.model.model_copy(update={"name": HOSTILE}),
                    "hardware": ctx.hardware.model_copy(update={"gpu_name": HOSTILE, "gpu_count": 1}),
                }
            )
            v = v.model_copy(
                update={
                    "campaign": "c1",
                    "levers": {"max_num_batched_tokens": levers},
                    "gates": [HOSTILE],
                    "context": ctx,
                }
            )
            write_verdict(results, v)
        report = await call(client, "campaign_report", campaign=CAMPAIGN)
    text = Path(report["report"]).read_text()
    lines = [line for line in text.splitlines() if "alert" in line]
    assert len(lines) >= 3  # the model, the GPU and the gate are in the report, escaped
    body = "\n".join(lines)
    assert "&lt;script>" in body and not live(body), live(body)  # no tag opens without its <
    assert all(line.startswith(("- ", "|")) for line in lines)  # no heading or paragraph broke out


# ---- class 10: one campaign name, one results folder -----------------------------------------------------------


async def test_one_campaign_name_a_second_file_with_the_name_is_refused_at_init(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=campaign_spec(free_port()))
        message = await call_error(
            client, "campaign_init", campaign="campaigns/c2.yml", spec=campaign_spec(free_port())
        )
        assert "name: 'c1' is the name of" in message and "c1.yml" in message
        assert not (env.workspace / "campaigns" / "c2.yml").exists()
        other = campaign_spec(free_port(), name="c2")
        assert (await call(client, "campaign_init", campaign="campaigns/c2.yml", spec=other))["name"] == "c2"


async def test_one_campaign_name_a_verdict_of_another_campaign_is_refused_by_every_reader(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=campaign_spec(free_port()))
        v = verdict("mnbt2048", {1: 40.0, 4: 150.0}).model_copy(
            update={"campaign": "other", "levers": {"max_num_batched_tokens": 2048}}
        )
        write_verdict(env.workspace / "campaigns" / "c1", v)
        for tool in READERS:
            message = await call_error(client, tool, campaign=CAMPAIGN)
            assert "a verdict of campaign 'other', cell 'mnbt2048', not of this campaign ('c1'" in message, tool
            assert "\n" not in message.strip(), tool  # one line
        message = await call_error(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
        assert "a verdict of campaign 'other'" in message
