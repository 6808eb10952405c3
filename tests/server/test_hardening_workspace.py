"""Issue 19, classes 3 and 8, through the real MCP server, in-process and over stdio.

Class 3, one path checker: a campaign's base.from_ladder (`~`, `..`, absolute, a symlink out), a campaign, ladder,
bench file or A/B named by a tool (campaign_*, ab_run, known_good_record and known_good_config, perf_baseline_*),
and the A/B, cell and arm names are refused before anything outside the workspace is read: in the same words
whether the file outside exists or not, without its contents (`secret.yml` is a real ladder: read through a hole,
it would plan; `keys.yml` holds keys) and without where a link leads. HOME is the outside folder, so an expanded
`~` would reach them.

Class 8, derived folders checked for the whole run: a campaign's results folder or a cell's folder, or an A/B's
trials folder, swapped for a symlink out while the run is between two cells (trials) stops the run at its next
write: the job fails saying what is a symlink, its server is stopped, nothing lands outside.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from redline.server.app import build_server
from tests.campaign.helpers import wait_until_gone
from tests.conftest import DATA, H200
from tests.rigor.helpers import context
from tests.rigor.scenario import ab_spec
from tests.server.helpers import LLAMA8B, Env, call, call_error, fake_servers, write_targets

pytestmark = pytest.mark.anyio
LADDER = DATA / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"
PLANTED = "campaigns/h.yml"


def tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


@pytest.fixture
def outside(env: Env, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Beside the workspace: a real ladder with a ceiling, a file of keys, and HOME; a symlink to it planted inside."""
    folder = env.root / "outside"
    folder.mkdir()
    shutil.copy(LADDER, folder / "secret.yml")
    (folder / "keys.yml").write_text("api_key_hunter2: s3cr3t-value\n")
    monkeypatch.setenv("HOME", str(folder))
    (env.workspace / "campaigns").mkdir(parents=True)
    (env.workspace / "escape").symlink_to(folder, target_is_directory=True)
    bench = env.workspace / "bench"
    bench.mkdir()
    shutil.copy(H200 / "bench_l8b_c16.json", bench / "a.json")  # a baseline to diff against, from inside
    return folder


def stdio(env: Env, home: Path) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env={**os.environ, "HOME": str(home)})


def plant(env: Env, from_ladder: str) -> None:
    """A campaign file someone with write access left in the workspace: no model, its base from a ladder."""
    spec = {
        "name": "h",
        "target": "local",
        "base": {"from_ladder": from_ladder},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1],
        "grid": {"max_num_batched_tokens": [2048, 8192]},
    }
    (env.workspace / PLANTED).write_text(json.dumps(spec))


def unrevealing(outside: Path, given: str, said: str, missing: str) -> None:
    """The refusal with the file there says what the one without it says (but for the names given, quoted), and
    nothing of the file or its place."""
    assert re.sub(r"'[^']*'", "'NAME'", said) == re.sub(r"'[^']*'", "'NAME'", missing), (said, missing)
    assert not any(word in said for word in ("hunter2", "s3cr3t", "llama8b", "rungs", "ceiling")), said
    if not os.path.isabs(given):
        assert str(outside) not in said, said


CAMPAIGN_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("campaign_plan", {"campaign": PLANTED}),
    ("campaign_status", {"campaign": PLANTED}),
    ("campaign_aggregate", {"campaign": PLANTED}),
    ("champion_select", {"campaign": PLANTED}),
    ("campaign_report", {"campaign": PLANTED}),
    ("campaign_run", {"campaign": PLANTED, "dry_run": True}),
    ("campaign_run", {"campaign": PLANTED, "i_understand_this_submits_jobs": True, "wait_s": 0}),
    ("known_good_record", {"from_campaign": PLANTED, "cell": "mnbt2048", "why": "w"}),
    ("known_good_config", {"verb": "record", "from_campaign": PLANTED, "cell": "mnbt8192", "why": "w"}),
    ("perf_baseline_record", {"name": "h", "campaign": PLANTED, "cell": "mnbt2048"}),
    ("perf_baseline_diff", {"baseline": "inside", "campaign": PLANTED, "cell": "mnbt2048"}),
]
PLANTED_LADDERS = ["~/secret.yml", "~/keys.yml", "../../outside/secret.yml", "../escape/keys.yml", "/abs/secret.yml"]


async def the_baseline(client: Client) -> None:
    ctx = context(16).model_dump(mode="json")
    await call(client, "perf_baseline_record", name="inside", bench_file="bench/a.json", context=ctx)


async def planted_refusals(client: Client, env: Env, from_ladder: str) -> list[str]:
    """Every campaign reader on the planted file, and ab_run and campaign_init naming the same ladder."""
    plant(env, from_ladder)
    said = [await call_error(client, tool, **args) for tool, args in CAMPAIGN_CALLS]
    arms = [
        {"name": "a", "campaign": PLANTED, "cell": "mnbt2048"},
        {"name": "b", "campaign": PLANTED, "cell": "mnbt8192"},
    ]
    spec = {**ab_spec(env.port), "arms": arms}
    said.append(await call_error(client, "ab_run", spec=spec, dry_run=True))
    spec = json.loads((env.workspace / PLANTED).read_text())
    said.append(await call_error(client, "campaign_init", campaign="campaigns/new.yml", spec=spec))
    return said


@pytest.mark.parametrize("given", PLANTED_LADDERS)
async def test_path_checker_a_planted_from_ladder_out_is_refused_by_every_tool_that_reads_the_campaign(
    env: Env, outside: Path, given: str
) -> None:
    given = given.replace("/abs", str(outside))
    before = tree(outside)
    async with Client(build_server(env.config)) as client:
        await the_baseline(client)
        said = await planted_refusals(client, env, given)
        missing = await planted_refusals(client, env, given.replace("secret", "nosuch").replace("keys", "nokeys"))
        assert (await call(client, "job_list"))["jobs"] == []  # refused before any job
    for text, other in zip(said, missing, strict=True):
        assert f"base.from_ladder {given[:40]!r}"[:-1] in text and "must be a path inside the workspace" in text, text
        unrevealing(outside, given, text, other)
    assert tree(outside) == before
    assert not (env.workspace / "campaigns" / "h").exists() and not (env.workspace / "campaigns" / "new.yml").exists()


NAMES = ["~/secret.yml", "../outside/secret.yml", "escape/secret.yml", "ladders/../../outside/secret.yml", "/abs"]


def named_calls(name: str) -> list[tuple[str, dict[str, Any]]]:
    """A tool argument that becomes a path, or a name that becomes one (A/B, cell, arm), given `name`."""
    ab_name = name.removesuffix(".yml")
    ctx = context(16).model_dump(mode="json")
    return [
        ("known_good_record", {"from_ladder": name}),
        ("known_good_config", {"verb": "record", "from_ladder": name}),
        ("known_good_record", {"from_campaign": name, "cell": "c", "why": "w"}),
        ("known_good_record", {"from_ab": ab_name, "arm": "a", "why": "w"}),
        ("perf_baseline_record", {"name": "n", "campaign": name, "cell": "c"}),
        ("perf_baseline_record", {"name": "n", "bench_file": name, "context": ctx}),
        ("perf_baseline_record", {"name": "n", "ab": ab_name, "arm": "a"}),
        ("perf_baseline_record", {"name": "n", "campaign": "campaigns/in.yml", "cell": ab_name}),
        ("perf_baseline_diff", {"baseline": "inside", "bench_file": name, "context": ctx}),
        ("perf_baseline_diff", {"baseline": "inside", "ab": "fine", "arm": ab_name}),
    ]


@pytest.mark.parametrize("name", NAMES)
async def test_path_checker_names_from_tools_are_refused_the_same_whether_the_file_outside_exists(
    env: Env, outside: Path, name: str
) -> None:
    name = name.replace("/abs", str(outside / "secret.yml"))
    before = tree(outside)
    async with Client(build_server(env.config)) as client:
        await the_baseline(client)
        for (tool, args), (_, without) in zip(
            named_calls(name), named_calls(name.replace("secret", "nosuch")), strict=True
        ):
            text = await call_error(client, tool, **args)
            assert "inside the workspace" in text or "'s name" in text, (tool, args, text)
            unrevealing(outside, name, text, await call_error(client, tool, **without))
        spec = ab_spec(env.port)
        spec["arms"][0] = {"name": "a", "campaign": name, "cell": "c"}
        text = await call_error(client, "ab_run", spec=spec, dry_run=True)
        spec["arms"][0]["campaign"] = name.replace("secret", "nosuch")
        unrevealing(outside, name, text, await call_error(client, "ab_run", spec=spec, dry_run=True))
    assert "arm a: campaign" in text and tree(outside) == before


@pytest.mark.slow  # a `redline mcp` child, or fake engine boots
async def test_path_checker_over_stdio(env: Env, outside: Path) -> None:
    plant(env, "~/secret.yml")
    async with Client(stdio(env, outside)) as client:
        plan = await call_error(client, "campaign_plan", campaign=PLANTED)
        ab = await call_error(client, "known_good_record", from_ab="../../outside/secret", arm="a", why="w")
        cell = await call_error(client, "perf_baseline_record", name="n", campaign=PLANTED, cell="../..")
        ctx = context(16).model_dump(mode="json")
        bench = await call_error(client, "perf_baseline_record", name="n", bench_file="escape/keys.yml", context=ctx)
    assert "base.from_ladder '~/secret.yml' must be a path inside the workspace" in plan and "llama8b" not in plan
    assert "'../../outside/secret' is a path, not the A/B's name; write the A/B's name, 'secret'" in ab
    assert "cell" in cell and "cannot be the cell's name" in cell
    assert "symlink that leads out of the workspace" in bench and str(outside) not in bench and "hunter2" not in bench


# ---- class 8: derived folders, checked before each write of a run ----------------------------------------------------


def campaign_spec(env: Env) -> dict[str, Any]:
    model = env.workspace / "models" / "llama8b"  # under the test's folder: every process it boots names it
    model.mkdir(parents=True, exist_ok=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    return {
        "name": "c1",
        "target": "local",
        "model": str(model),
        "base": {"max_model_len": 4096, "port": env.port},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1],
        "warmup_requests": 0,
        "grid": {"max_num_batched_tokens": [2048, 8192]},
    }


async def appears(*paths: Path) -> None:
    """Wait (polling, as a neighbour would) until every path exists."""
    with anyio.fail_after(60):
        while not all(p.exists() for p in paths):
            await anyio.sleep(0.01)


def swap_for_a_link(folder: Path, target: Path) -> None:
    folder.rename(folder.with_name(folder.name + "-moved"))
    folder.symlink_to(target, target_is_directory=True)


async def finished(client: Client, job_id: str) -> dict[str, Any]:
    with anyio.fail_after(120):
        while not (job := await call(client, "job_status", job_id=job_id, wait_s=5))["done"]:
            pass
    return job


async def run_and_swap(client: Client, env: Env, outside: Path, swapped: str) -> dict[str, Any]:
    """A two-cell campaign; between its cells (the second one booting) a folder is swapped for a link out."""
    (env.workspace / "campaigns" / "c1.yml").write_text(json.dumps(campaign_spec(env)))
    started = await call(
        client, "campaign_run", campaign="campaigns/c1.yml", i_understand_this_submits_jobs=True, wait_s=0
    )
    cells = env.workspace / "campaigns" / "c1" / "cells"
    await appears(cells / "mnbt2048" / "verdict.yml", cells / "mnbt8192" / "server.json")  # the 2nd cell booting
    swap_for_a_link(env.workspace / "campaigns" / swapped, outside)
    return await finished(client, started["job_id"])


@pytest.mark.slow  # a `redline mcp` child, or fake engine boots
@pytest.mark.parametrize("swapped", ["c1", "c1/cells"])
async def test_derived_folder_a_campaign_folder_swapped_between_cells_stops_the_run_at_its_next_write(
    env: Env, outside: Path, swapped: str
) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="1.0")  # the second cell's boot: the moment a neighbour swaps the folder
    for sub in ("cells/mnbt8192", "mnbt8192"):  # what a write through either link would land in
        (outside / sub).mkdir(parents=True)
    before = tree(outside)
    async with Client(build_server(env.config)) as client:
        job = await run_and_swap(client, env, outside, swapped)
    assert job["state"] == "failed" and f"{swapped.split('/')[-1]} is a symlink" in job["error"], job
    assert "remove it" in job["error"] and tree(outside) == before
    assert fake_servers(env.port) == [] and wait_until_gone(env.root) == []
    verdicts = list((env.workspace / "campaigns").rglob("verdict.yml"))
    assert [v.parent.name for v in verdicts] == ["mnbt2048"]  # the second cell got no verdict anywhere


@pytest.mark.slow  # a `redline mcp` child, or fake engine boots
async def test_derived_folder_an_ab_trials_folder_swapped_between_trials_stops_the_run(env: Env, outside: Path) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="1.0")
    (outside / "b-1").mkdir()
    before = tree(outside)
    async with Client(build_server(env.config)) as client:
        spec = {**ab_spec(env.port), "trials": 2}
        started = await call(client, "ab_run", spec=spec, i_understand_this_submits_jobs=True, wait_s=0)
        ab = env.workspace / "ab" / "ab1"
        await appears(ab / "trials" / "a-1" / "trial.yml")
        await appears(ab / "trials" / "b-1" / "server.json")  # the next trial (b-1) booting
        swap_for_a_link(ab / "trials", outside)
        job = await finished(client, started["job_id"])
    assert job["state"] == "failed" and "trials is a symlink" in job["error"], job
    assert tree(outside) == before and fake_servers(env.port) == []


@pytest.mark.slow  # a `redline mcp` child, or fake engine boots
async def test_derived_folder_over_stdio(env: Env, outside: Path) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="1.0")
    before = tree(outside)
    async with Client(stdio(env, outside)) as client:
        job = await run_and_swap(client, env, outside, "c1")
    assert job["state"] == "failed" and "c1 is a symlink" in job["error"], job
    assert tree(outside) == before and fake_servers(env.port) == [] and wait_until_gone(env.root) == []
