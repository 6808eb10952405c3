"""Issue 19, class 4: the known-good registry cannot change a run behind the caller's back, through the real MCP
server (in-process, and over stdio).

A knob the caller set wins over an entry whatever its value (set, not "away from its default"); a campaign
cell's regime, boot and benches are planned from the config the entry leaves, so they say what runs; cells or
arms that the entry would make one config are refused, naming it; and an entry's flags and env pass its
engine's allowlist when it is recorded and whenever the registry is read, the refusal naming the entry.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from redline.server.app import build_server
from tests.server.helpers import LLAMA8B, Env, call, call_error, free_port, init_args
from tests.server.scenario import CAMPAIGN, campaign_spec

pytestmark = pytest.mark.anyio
FLAG = "--gdn-prefill-backend=triton"
KEY = {"model": str(LLAMA8B), "hardware": "cpu", "engine_version": "0.26.0"}  # the fake engine, on this host
ENTRY_NAME = f"known-good entry {LLAMA8B} on cpu, vllm 0.26.0"


async def record(client: Client, **changes: Any) -> None:
    entry = {
        **KEY,
        "flags": [FLAG],
        "knobs": {"enforce_eager": True},
        "why": "graphs crash under load",
        "evidence": [{"kind": "note", "ref": "notes.md"}],
        **changes,
    }
    await call(client, "known_good_record", **entry)


def ab_spec(port: int, *arms: dict[str, Any]) -> dict[str, Any]:
    serve = {"model": str(LLAMA8B), "max_model_len": 4096, "port": port}
    return {
        "name": "ab1",
        "target": "local",
        "arms": [{"name": a.pop("name"), "serve": serve | a} for a in arms],
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "trials": 1,
    }


# ---- a knob the caller set wins, whatever its value ------------------------------------------------------------


async def test_known_good_cannot_override_a_knob_a_campaign_set_even_to_its_default(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await record(client)
        spec = campaign_spec(free_port())
        spec["base"] = {**spec["base"], "enforce_eager": False}  # the default, set on purpose: graphs
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=spec)
        plan = (await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True))["result"]["plan"]
    for cell in plan["cells"]:
        assert cell["serve"]["enforce_eager"] is False and "--enforce-eager" not in cell["boot_command"]
        assert cell["regime"]["graphs"] == "graphs"  # the regime is the argv's
        assert FLAG in cell["boot_command"]  # what the caller did not set is still applied
    assert any("kept the config's own enforce_eager False" in g for g in plan["gates"]), plan["gates"]


async def test_known_good_the_regime_and_the_recorded_config_are_the_argv_that_runs(env: Env) -> None:
    """A knob the caller left unset is the entry's: the cell's serve, regime, boot and benches all say it."""
    async with Client(build_server(env.config)) as client:
        await record(client, knobs={"enforce_eager": True, "max_num_seqs": 64})
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=campaign_spec(free_port()))
        plan = (await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True))["result"]["plan"]
    for cell in plan["cells"]:
        argv = cell["boot_command"]
        assert cell["serve"]["enforce_eager"] is True and "--enforce-eager" in argv
        assert cell["regime"]["graphs"] == "eager"  # computed after the entry, not before it
        assert cell["serve"]["max_num_seqs"] == 64 and argv[argv.index("--max-num-seqs") + 1] == "64"
        assert all(b["command"][b["command"].index("--max-concurrency") + 1] in ("1", "4") for b in cell["benches"])


async def test_known_good_cannot_override_an_ab_arm_that_set_the_knob(env: Env) -> None:
    port = free_port()
    async with Client(build_server(env.config)) as client:
        await record(client)
        spec = ab_spec(port, {"name": "graphs", "enforce_eager": False}, {"name": "plain", "max_num_seqs": 8})
        plan = (await call(client, "ab_run", spec=spec, dry_run=True))["result"]["plan"]
    arms = {a["name"]: a for a in plan["arms"]}
    assert arms["graphs"]["serve"]["enforce_eager"] is False and "--enforce-eager" not in arms["graphs"]["boot_command"]
    assert arms["plain"]["serve"]["enforce_eager"] is True and "--enforce-eager" in arms["plain"]["boot_command"]
    assert all(FLAG in a["boot_command"] for a in arms.values())
    assert "kept the config's own enforce_eager False" in plan["known_good"]["note"]


# ---- cells or arms the entry makes one are refused ----------------------------------------------------------


async def test_known_good_cannot_make_two_cells_one_config(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await record(client, knobs={"max_num_seqs": 64})
        spec = campaign_spec(free_port(), grid=None, cells=[{"name": "pinned", "max_num_seqs": 64}, {"name": "free"}])
        await call(client, "campaign_init", campaign=CAMPAIGN, spec=spec)
        assert len((await call(client, "campaign_plan", campaign=CAMPAIGN))["cells"]) == 2  # no entry: two configs
        message = await call_error(client, "campaign_run", campaign=CAMPAIGN, dry_run=True)
        assert "'pinned' and 'free' boot the same serve config once the known-good entry is applied" in message
        assert "skip_known_good" in message
        skipped = await call(client, "campaign_run", campaign=CAMPAIGN, dry_run=True, skip_known_good=True)
    assert len(skipped["result"]["plan"]["cells"]) == 2


async def test_known_good_cannot_make_two_ab_arms_one_config(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await record(client, knobs={"max_num_seqs": 64})
        spec = ab_spec(free_port(), {"name": "pinned", "max_num_seqs": 64}, {"name": "free"})
        message = await call_error(client, "ab_run", spec=spec, dry_run=True)
        assert "arms 'pinned' and 'free' boot the same serve config once the known-good entry is applied" in message
        assert ENTRY_NAME in message
        assert (await call(client, "ab_run", spec=spec, dry_run=True, skip_known_good=True))["result"]["plan"]


# ---- an entry passes the allowlist when recorded and whenever read --------------------------------------------


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"flags": ["--trust-remote-code"]}, "runs the model repository's own Python code"),
        ({"env": {"LD_PRELOAD": "/tmp/evil.so"}}, "LD_PRELOAD is refused"),
        ({"flags": ["--speculative-config.model=/etc/evil"]}, "(speculative_config.model) is refused"),
        ({"flags": ["--max-model-len=1"]}, "a knob the serve config owns"),
    ],
)
async def test_known_good_an_entry_is_admitted_by_the_allowlist_at_record_time(
    env: Env, changes: dict[str, Any], words: str
) -> None:
    async with Client(build_server(env.config)) as client:
        entry = {**KEY, "why": "w", "evidence": [{"kind": "note", "ref": "n"}], **changes}
        message = await call_error(client, "known_good_record", **entry)
    assert ENTRY_NAME + " is refused" in message and words in message, message
    assert not (env.workspace / "known-good.yml").exists()


def plant_entry(srv: Env, **changes: Any) -> None:
    entry = {
        **KEY,
        "engine": "vllm",
        "why": "planted",
        "evidence": [{"kind": "note", "ref": "n"}],
        "recorded_at": "2026-12-01T00:00:00Z",
        **changes,
    }
    (srv.workspace / "known-good.yml").write_text(json.dumps({"schema_version": 1, "entries": [entry]}))


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"flags": ["--trust-remote-code"]}, "runs the model repository's own Python code"),
        ({"env": {"LD_PRELOAD": "/tmp/evil.so"}}, "LD_PRELOAD is refused"),
        ({"flags": ['--speculative-config={"method": "ngram", "download_dir": "/x"}']}, "download_dir) is refused"),
    ],
)
async def test_known_good_a_planted_entry_is_refused_by_every_reader_naming_it(
    env: Env, changes: dict[str, Any], words: str
) -> None:
    plant_entry(env, **changes)
    async with Client(build_server(env.config)) as client:
        messages = [
            await call_error(client, "known_good_list"),
            await call_error(client, "known_good_lookup", **KEY),
            await call_error(client, "known_good_config", verb="list"),
            await call_error(client, "known_good_record", **KEY, why="w", evidence=[{"kind": "note", "ref": "n"}]),
        ]
        ladder = init_args(
            "ladders/l.yml", fixed={"port": free_port()}, gpu_name="NVIDIA H200", engine_version="0.26.0"
        )
        messages.append(await call_error(client, "ladder_init", **ladder))
        spec = campaign_spec(free_port())
        messages.append(await call_error(client, "campaign_init", campaign=CAMPAIGN, spec=spec))  # it reads it too
        (env.workspace / CAMPAIGN).parent.mkdir(parents=True, exist_ok=True)
        (env.workspace / CAMPAIGN).write_text(json.dumps(spec))  # the file a person wrote by hand
        messages.append(await call_error(client, "campaign_run", campaign=CAMPAIGN, dry_run=True))
        messages.append(
            await call_error(
                client,
                "ab_run",
                spec=ab_spec(free_port(), {"name": "a"}, {"name": "b", "max_num_seqs": 8}),
                dry_run=True,
            )
        )
    for message in messages:
        assert ENTRY_NAME + " is refused" in message and words in message, message
        assert "known-good.yml" in message


async def test_known_good_over_stdio(env: Env) -> None:
    plant_entry(env, flags=["--trust-remote-code"])
    argv = [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params) as client:
        assert ENTRY_NAME + " is refused" in await call_error(client, "known_good_list")
        (env.workspace / "known-good.yml").unlink()
        await record(client)
        spec = ab_spec(free_port(), {"name": "graphs", "enforce_eager": False}, {"name": "plain"})
        plan = (await call(client, "ab_run", spec=spec, dry_run=True))["result"]["plan"]
    arms = {a["name"]: a for a in plan["arms"]}
    assert arms["graphs"]["serve"]["enforce_eager"] is False and arms["plain"]["serve"]["enforce_eager"] is True
