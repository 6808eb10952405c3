"""campaign_init tells what will boot, and dry runs say what they do and ask the engine's version once per session,
through a real `redline mcp` subprocess on stdio and the `redline` CLI (issue 20, item 7).

campaign_init used to echo the spec with its defaults (enforce_eager false, port 8000) where base.from_ladder
resolves to an eager server on 8011; now it answers with the base and every cell as they will boot, said where
each came from. A dry run asks the target's engine for its version (10-14 s on the vLLM CPU build): it says so in
progress notifications, and the answer is kept for the server's session (a CLI run: its process). The target's
engine here is the fake vLLM behind a wrapper that logs every `--version` it answers, so the probes are counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from ruamel.yaml import YAML

from tests.server.helpers import FAKE_VLLM, KV_TOKENS, LLAMA8B, Env, call, free_port

pytestmark = pytest.mark.anyio
LADDER = Path(__file__).resolve().parents[1] / "data" / "vllm-0.26.0-h200-ladder" / "llama8b" / "ladder.yml"
EAGER_PORT = 8011


def counting_targets(env: Env) -> Path:
    """`local` boots the fake vLLM through a wrapper that appends a line to a file for each `--version` it answers;
    the file's path."""
    probes = env.root / "version-probes.txt"
    wrapper = env.root / "vllm-counting.py"
    wrapper.write_text(
        "import os, sys\n"
        "if sys.argv[1:] == ['--version']:\n"
        f"    with open({str(probes)!r}, 'a') as f:\n"
        "        f.write('probe\\n')\n"
        "    print('0.26.0')\n"
        "    sys.exit(0)\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE_VLLM)!r}, *sys.argv[1:]])\n"
    )
    local = {
        "kind": "local",
        "workdir": str(env.root / "target"),
        "engine_command": [sys.executable, str(wrapper)],
        "env": {"FAKE_VLLM_KV_TOKENS": str(KV_TOKENS), "FAKE_VLLM_BOOT_S": "0.2"},
    }
    (env.root / "targets.yml").write_text(json.dumps({"targets": {"local": local}}))
    return probes


def probes_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def eager_ladder(env: Env) -> str:
    """The real H200 llama8b ladder (ceiling 131072 / 131072), climbed eager with its server on 8011."""
    yaml = YAML()
    doc = yaml.load(LADDER.read_text())
    doc["fixed"]["enforce_eager"] = True
    doc["fixed"]["port"] = EAGER_PORT
    (env.workspace / "ladders").mkdir(exist_ok=True)
    with (env.workspace / "ladders" / "eager.yml").open("w") as f:
        yaml.dump(doc, f)
    return "ladders/eager.yml"


def campaign_over(ladder: str, name: str = "c1") -> dict[str, Any]:
    return {
        "name": name,
        "target": "local",
        "base": {"from_ladder": f"../{ladder}", "max_num_seqs": 64},
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [1, 4],
        "grid": {"max_num_batched_tokens": [2048, 8192]},
    }


def ab_spec(port: int) -> dict[str, Any]:
    serve = {"model": str(LLAMA8B), "max_model_len": 4096, "port": port}
    return {
        "name": "ab1",
        "target": "local",
        "baseline": "a",
        "claim": "throughput",
        "arms": [
            {"name": "a", "serve": serve | {"max_num_batched_tokens": 2048}},
            {"name": "b", "serve": serve | {"max_num_batched_tokens": 8192}},
        ],
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [4],
        "trials": 3,
        "warmup_requests": 0,
    }


def stdio(env: Env) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


class Heard:
    """The progress notifications of one call."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []

    async def __call__(self, value: float, total: float | None, message: str | None) -> None:
        self.seen.append((value, message or ""))

    @property
    def messages(self) -> list[str]:
        return [m for _, m in self.seen]

    def grows(self) -> bool:
        values = [v for v, _ in self.seen]
        return values == sorted(values) and len(set(values)) == len(values)


async def dry(client: Client, tool: str, **args: Any) -> tuple[dict[str, Any], Heard]:
    heard = Heard()
    result = await client.call_tool(tool, {**args, "dry_run": True}, progress_callback=heard)
    assert not result.is_error, result.content
    return result.structured_content, heard


# ---- campaign_init: what will boot ----------------------------------------------------------------------------


async def test_campaign_init_answers_with_the_ladders_eager_server_on_its_port_not_the_defaults(env: Env) -> None:
    counting_targets(env)
    ladder = eager_ladder(env)
    async with Client(stdio(env)) as client:
        created = await call(client, "campaign_init", campaign="campaigns/c1.yml", spec=campaign_over(ladder))
        base = created["base"]
        assert (base["enforce_eager"], base["port"], base["max_model_len"]) == (True, EAGER_PORT, 131072)
        assert base["max_num_seqs"] == 64 and base["model"] == "/models/llama8b"  # the base's own knob over it
        assert created["base_from"] == (
            "base.from_ladder ../ladders/eager.yml: its ceiling (max_model_len 131072, max_num_batched_tokens "
            "131072, rungs 4) with the ladder's fixed knobs (enforce_eager True, load_format dummy, "
            "port 8011); the base's own knobs over it: max_num_seqs 64"
        )
        cells = created["plan"]["cells"]
        assert [c["serve"]["max_num_batched_tokens"] for c in cells] == [2048, 8192]
        for cell in cells:
            assert cell["serve"]["enforce_eager"] and cell["serve"]["port"] == EAGER_PORT
            assert cell["regime"]["graphs"] == "eager"
            argv = cell["boot_command"]
            assert "--enforce-eager" in argv and argv[argv.index("--port") + 1] == str(EAGER_PORT)
            assert argv[:2] == [sys.executable, str(env.root / "vllm-counting.py")]  # the target's own command
        assert created["known_good"].startswith("no known-good entry for /models/llama8b (vllm): a run applies none")
        assert "dry_run=true" in created["next"]

        # what campaign_init said is what the run plans: the dry run's cells boot the same configs
        planned, _ = await dry(client, "campaign_run", campaign="campaigns/c1.yml")
        assert [c["serve"] for c in planned["result"]["plan"]["cells"]] == [c["serve"] for c in cells]


async def test_campaign_init_names_the_known_good_entries_a_run_chooses_from(env: Env) -> None:
    counting_targets(env)
    ladder = eager_ladder(env)
    async with Client(stdio(env)) as client:
        await call(
            client,
            "known_good_config",
            verb="record",
            model="/models/llama8b",
            hardware="NVIDIA H200",
            engine_version="0.26.0",
            flags=["--disable-log-stats"],
            why="a test entry",
            evidence=[{"kind": "note", "ref": "known-good.yml", "note": "by hand"}],
        )
        created = await call(client, "campaign_init", campaign="campaigns/c1.yml", spec=campaign_over(ladder))
    said = created["known_good"]
    assert "/models/llama8b on NVIDIA H200, vllm 0.26.0" in said
    assert "applies the one that matches the target's hardware and engine version" in said
    assert "not read here" in said and "dry_run=true" in said


# ---- dry runs: progress, and the engine's version asked once per session ---------------------------------------


async def test_dry_runs_say_their_progress_and_ask_the_engine_version_once_per_server_session(env: Env) -> None:
    probes = counting_targets(env)
    port = free_port()
    spec = campaign_over(eager_ladder(env))
    async with Client(stdio(env)) as client:
        await call(client, "campaign_init", campaign="campaigns/c1.yml", spec=spec)
        assert probes_in(probes) == 0  # campaign_init does not ask the target

        first, heard = await dry(client, "campaign_run", campaign="campaigns/c1.yml")
        assert first["job_id"] is None and first["result"]["dry_run"]
        assert probes_in(probes) == 1
        assert heard.grows() and len(heard.seen) >= 4, heard.seen
        assert heard.messages[0] == "reading local: its GPUs"
        assert "asking local for vllm's version (kept for the session)" in heard.messages
        assert "vllm 0.26.0 on local" in heard.messages
        assert heard.messages[-1] == "planned 4 boots at most; none started"

        second, heard = await dry(client, "campaign_run", campaign="campaigns/c1.yml")
        assert probes_in(probes) == 1  # the second dry run asked nobody
        assert "vllm 0.26.0 on local (asked earlier this session)" in heard.messages
        assert not any(m.startswith("asking") for m in heard.messages)
        assert second["result"]["plan"] == first["result"]["plan"]

        ab, heard = await dry(client, "ab_run", spec=ab_spec(port))  # another tool, the same target: the same answer
        assert probes_in(probes) == 1
        assert "vllm 0.26.0 on local (asked earlier this session)" in heard.messages
        assert heard.messages[-1] == "planned 6 boots at most; none started" and heard.grows()
        assert ab["result"]["plan"]["boots"] == 6

    async with Client(stdio(env)) as client:  # a new session asks again
        await dry(client, "campaign_run", campaign="campaigns/c1.yml")
    assert probes_in(probes) == 2


async def test_the_cli_dry_run_prints_its_progress_and_asks_the_version_once(env: Env) -> None:
    probes = counting_targets(env)
    ladder = eager_ladder(env)
    path = env.workspace / "campaigns" / "c1.yml"
    argv = [sys.executable, "-m", "redline", "campaign"]
    init = subprocess.run(
        [*argv, "init", "--campaign", str(path), "--spec", json.dumps(campaign_over(ladder))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stderr
    assert "base: base.from_ladder ../ladders/eager.yml: its ceiling (max_model_len 131072" in init.stdout
    assert "--enforce-eager" in init.stdout and f"--port {EAGER_PORT}" in init.stdout
    assert "known-good: no known-good entry for /models/llama8b" in init.stdout

    targets = env.root / "targets.yml"
    done = subprocess.run(
        [*argv, "run", "--campaign", str(path), "--targets", str(targets), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "[ 10%] reading local: its GPUs" in lines
    assert "[ 20%] asking local for vllm's version (kept for the session)" in lines
    assert lines[-1] == "[100%] planned 4 boots at most; none started"
    assert (
        "dry run: 2 boots and 4 benches would run, then up to 2 replicate boots of the top cells; none started"
        in done.stdout
    )
    assert probes_in(probes) == 1
