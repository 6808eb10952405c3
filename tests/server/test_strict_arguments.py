"""Strict tool arguments and engine detection through a real `redline mcp` subprocess on stdio (issue 20, 6 and 11).

The MCP SDK drops an argument its tool does not declare and says a schema error in pydantic's own text with a
documentation URL; redline's tools refuse the first by name with the closest valid one, and say the second a
line per field with what to write, as the CLI says the same mistake. Two refusals that pointed the wrong way
(an A/B named by its file, a campaign named without .yml) now say what to write. parse_boot_log tells the
engine from the log when none is named.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from redline.ops.requests import OPERATIONS
from tests.server.helpers import Env, call, call_error, init_args

pytestmark = pytest.mark.anyio
DATA = Path(__file__).resolve().parent.parent / "data"
PREFIX = "Error executing tool "  # the SDK's, before every tool's own message


def stdio(env: Env) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


def lines_of(said: str, tool: str) -> list[str]:
    """The tool's own lines, without the SDK's prefix on the first."""
    assert said.startswith(f"{PREFIX}{tool}: "), said
    return said.removeprefix(f"{PREFIX}{tool}: ").splitlines()


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".redline" not in p.parts)


def redline(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redline", *argv], capture_output=True, text=True, timeout=120)


# ---- 6. an unknown argument is refused by name, with the closest valid one -----------------------------


async def test_every_tool_refuses_an_unknown_argument_by_name_and_starts_nothing(env: Env) -> None:
    before = files(env.workspace)
    async with Client(stdio(env)) as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == set(OPERATIONS)  # every tool
        for t in tools:
            assert t.input_schema.get("additionalProperties") is False, t.name
            said = await call_error(client, t.name, colour="red")
            assert lines_of(said, t.name) == [f"unknown argument 'colour': write one of {_names(t)}, or leave it out"]

        said = await call_error(client, "campaign_run", campaign="campaigns/c1.yml", i_understand=True)
        assert lines_of(said, "campaign_run") == [
            "unknown argument 'i_understand': did you mean 'i_understand_this_submits_jobs'?"
        ]
        # champion_select has no focus: the call is refused, not answered with the throughput ranking
        said = await call_error(client, "champion_select", campaign="campaigns/c1.yml", focus="latency")
        assert lines_of(said, "champion_select") == [
            "unknown argument 'focus': write one of campaign, top, or leave it out"
        ]
        said = await call_error(client, "job_list", limt=3, stat="running")
        assert lines_of(said, "job_list") == [
            "unknown argument 'limt': did you mean 'limit'?",
            "unknown argument 'stat': did you mean 'state'?",
        ]
        assert (await call(client, "job_list"))["jobs"] == []  # nothing was queued
    assert files(env.workspace) == before


def _names(t: Any) -> str:
    return ", ".join(sorted(t.input_schema["properties"]))


# ---- 6. every validation error is one line naming the field and what to write ---------------------------


async def test_schema_errors_are_a_line_per_field_with_what_to_write_and_no_url(env: Env) -> None:
    async with Client(stdio(env)) as client:
        said = await call_error(
            client, "perf_baseline_diff", baseline="Bad Name", focus="latency", tolerance_pct=0, guarded="x"
        )
        lines = lines_of(said, "perf_baseline_diff")
        assert [line.split(":")[0] for line in lines] == ["baseline", "focus", "guarded", "tolerance_pct"]
        assert all("; write " in line for line in lines), lines
        assert "tolerance_pct: Input should be greater than 0, not 0; write a number > 0.0" in lines
        assert lines[1].endswith(", not 'latency'; write one of those")
        for raw in ("http", "validation error", "[type=", "input_value"):
            assert raw not in said

        nested = init_args("ladders/l8b.yml", fixed={"portt": 8011})
        said = await call_error(client, "ladder_init", **nested)
        assert lines_of(said, "ladder_init") == ["fixed.portt: unknown field; write 'port' instead, or leave it out"]
        said = await call_error(client, "rung_run", ladder="ladders/l8b.yml", target="local", wait_s="soon")
        assert lines_of(said, "rung_run") == [
            "wait_s: Input should be a valid number, unable to parse string as a number, not 'soon'; write a number"
        ]


def test_the_cli_says_the_same_mistakes_the_same_way(tmp_path: Path) -> None:
    """One formatter: the CLI's flags and its --spec/--fixed JSON keys are refused with the MCP tools' words."""
    args = init_args()
    done = redline(
        "ladder",
        "init",
        "--ladder",
        str(tmp_path / "l8b.yml"),
        "--model",
        args["model"],
        "--model-path",
        args["model_path"],
        "--floor-max-model-len",
        "32768",
        "--floor-max-num-batched-tokens",
        "8192",
        "--fixed",
        '{"portt": 8011}',
    )
    assert done.returncode == 2
    assert "argument --fixed: portt: unknown field; write 'port' instead, or leave it out" in done.stderr
    done = redline("campaign", "init", "--campaign", str(tmp_path / "c.yml"), "--spec", '{"nme": "c1"}')
    assert done.returncode == 2 and "nme: unknown field; write 'name' instead, or leave it out" in done.stderr
    assert "http" not in done.stderr and not (tmp_path / "c.yml").exists()
    done = redline("parse-log", str(DATA / "sglang-0.5.17-h200" / "good-boot.log"), "--colour", "red")
    assert done.returncode == 2 and "unrecognized arguments: --colour red" in done.stderr  # argparse: unknown flags


# ---- 6. the two refusals that pointed the wrong way -------------------------------------------------------


@pytest.fixture
def recorded(env: Env) -> Env:
    """The workspace with the real H200 A/B (ab/l8b-mnbt.yml and its trials) and campaign (campaigns/l8b-h200.yml
    and its results folder campaigns/l8b-h200/) in it."""
    shutil.copytree(DATA / "vllm-0.26.0-h200-ab" / "ab", env.workspace / "ab")
    campaigns = env.workspace / "campaigns"
    campaigns.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "vllm-0.26.0-h200-campaign" / "l8b-h200.yml", campaigns)
    shutil.copytree(DATA / "vllm-0.26.0-h200-campaign" / "l8b-h200", campaigns / "l8b-h200")
    return env


async def test_an_ab_named_by_its_file_and_a_campaign_without_yml_are_told_what_to_write(recorded: Env) -> None:
    async with Client(stdio(recorded)) as client:
        said = await call_error(client, "perf_baseline_record", name="b1", ab="l8b-mnbt.yml", arm="mnbt8192")
        assert lines_of(said, "perf_baseline_record") == [
            "A/B 'l8b-mnbt.yml' is its file's name; write the A/B's name, 'l8b-mnbt'"
        ]
        said = await call_error(client, "known_good_record", from_ab="ab/l8b-mnbt.yml", arm="mnbt8192", why="w")
        assert "write the A/B's name, 'l8b-mnbt'" in said and "ab_run first" not in said
        said = await call_error(client, "perf_baseline_record", name="b1", ab="l8b-mnbtt", arm="mnbt8192")
        assert "no A/B named 'l8b-mnbtt'" in said and "run it with ab_run first" in said  # truly missing: still so

        cell = "mnbt8192-seqs128"
        said = await call_error(client, "perf_baseline_record", name="b2", campaign="campaigns/l8b-h200", cell=cell)
        assert "that is the campaign's results folder; write its file, the name ending in .yml (l8b-h200.yml)" in said
        assert "is a folder, not a file" not in said
        named = await call(client, "perf_baseline_record", name="b2", campaign="campaigns/l8b-h200.yml", cell=cell)
        assert (named["name"], named["baseline"]["source"]["ref"]) == ("b2", "campaigns/l8b-h200.yml")  # with .yml


# ---- 11. parse_boot_log tells the engine from the log -------------------------------------------------------


async def test_parse_boot_log_tells_the_engine_from_the_log_and_reads_sglang_s_memory(env: Env) -> None:
    sglang = (DATA / "sglang-0.5.17-h200" / "good-boot.log").read_text()
    vllm = (DATA / "vllm-0.26.0-h200" / "l8b_32k.log").read_text()
    async with Client(stdio(env)) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "parse_boot_log")
        assert tool.input_schema["properties"]["engine"]["default"] == "auto"

        read = await call(client, "parse_boot_log", text=sglang)
        assert (read["engine"], read["status"], read["kv_cache_tokens"]) == ("sglang", "boot_ok", 906067)
        memory = read["memory"]
        assert (memory["weights_gib"], memory["requested_gib"]) == (15.02, 125.63)
        assert memory["cudagraph_gib"] == pytest.approx(1.47 + 0.21)
        assert (await call(client, "parse_boot_log", text=sglang, engine="auto")) == read

        read = await call(client, "parse_boot_log", text=vllm)
        assert (read["engine"], read["status"], read["memory"]["weights_gib"]) == ("vllm", "boot_ok", 15.0)

        said = await call_error(client, "parse_boot_log", text=sglang, engine="vllm")  # a named engine is obeyed
        assert "this is not a vLLM boot log" in said
        said = await call_error(client, "parse_boot_log", text="hello\n")  # neither: the default engine's reader says
        assert "this is not a vLLM boot log" in said
