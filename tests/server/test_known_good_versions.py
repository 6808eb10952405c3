"""Known-good entries through a real `redline mcp` subprocess on stdio (issue 20, item 3): an engine version is
compared as a release (an entry stored as 0.26.0, from a boot log, applies where `vllm --version` says
0.26.0+cpu, and the note says why), an entry that exists but does not match is named with the field that
differed, and an entry recorded from an A/B arm keeps no gate's pin (max_num_seqs pinned to the top concurrency).

The target's engine is the fake vLLM behind a wrapper whose `--version` prints a CPU build's version."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.server.helpers import FAKE_VLLM, H200, KV_TOKENS, LLAMA8B, Env, call, call_error, fake_servers

pytestmark = pytest.mark.anyio
CPU_BUILD = "0.26.0+cpu"  # what the wrapper's `vllm --version` prints; the fake's boot logs say 0.26.0
QWEN32B = H200 / "models" / "qwen32b"


def cpu_build_targets(env: Env) -> None:
    """The `local` target boots the fake vLLM through a wrapper that answers `--version` as a CPU build does."""
    wrapper = env.root / "vllm-cpu-build.py"
    wrapper.write_text(
        "import os, sys\n"
        f"if sys.argv[1:] == ['--version']:\n    print({CPU_BUILD!r})\n    sys.exit(0)\n"
        f"os.execv(sys.executable, [sys.executable, {str(FAKE_VLLM)!r}, *sys.argv[1:]])\n"
    )
    engine_env = {"FAKE_VLLM_KV_TOKENS": str(KV_TOKENS), "FAKE_VLLM_BOOT_S": "0.2"}
    local = {"kind": "local", "workdir": str(env.root / "target"), "engine_command": [sys.executable, str(wrapper)]}
    (env.root / "targets.yml").write_text(json.dumps({"targets": {"local": local | {"env": engine_env}}}))


def ab(name: str, port: int, model: Path = LLAMA8B, trials: int = 1) -> dict[str, Any]:
    serve = {"model": str(model), "max_model_len": 4096, "port": port}
    return {
        "name": name,
        "target": "local",
        "baseline": "a",
        "claim": "throughput",
        "arms": [
            {"name": "a", "serve": serve | {"max_num_batched_tokens": 2048}},
            {"name": "b", "serve": serve | {"max_num_batched_tokens": 8192}},
        ],
        "workload": {"input_len": 128, "output_len": 16},
        "concurrencies": [4],
        "trials": trials,
        "warmup_requests": 0,
    }


def stdio(env: Env) -> StdioServerParameters:
    argv = [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


async def _recorded_from_an_arm_keeps_no_gate_pin(client: Client, env: Env) -> str:
    """An A/B whose gate pins max_num_seqs, and entries recorded from its arm; the hardware it ran on."""
    ran = await call(client, "ab_run", spec=ab("ab1", env.port), i_understand_this_submits_jobs=True, wait_s=120)
    assert ran["state"] == "succeeded", ran
    arm_b = next(a for a in ran["result"]["arms"] if a["arm"] == "b")
    assert arm_b["serve"]["max_num_seqs"] == 4  # the A/B's gate pinned it to the top concurrency
    recorded = await call(client, "known_good_config", verb="record", from_ab="ab1", arm="b", why="the better arm")
    knobs = recorded["entry"]["knobs"]
    assert "max_num_seqs" not in knobs and knobs["max_num_batched_tokens"] == 8192, knobs
    assert recorded["left_out"] == ["max_num_seqs 4"] and "a gate's pin" in recorded["note"], recorded
    kept = await call(
        client, "known_good_config", verb="record", from_ab="ab1", arm="b", why="b", keep_knobs=["max_num_seqs"]
    )
    assert kept["replaced"] and kept["entry"]["knobs"] == {"max_num_seqs": 4}  # what the user marks, only that
    wrong = await call_error(client, "known_good_config", verb="record", from_ab="ab1", arm="b", keep_knobs=["port"])
    assert "keep_knobs: port is not a knob that config sets" in wrong
    return str(kept["entry"]["hardware"])  # cpu on a host without a GPU


async def test_a_local_build_suffix_is_the_same_release_and_a_miss_names_its_field(env: Env) -> None:
    cpu_build_targets(env)
    async with Client(stdio(env)) as client:
        here = await _recorded_from_an_arm_keeps_no_gate_pin(client, env)
        entry = {"hardware": here, "why": "eager on this host", "evidence": [{"kind": "note", "ref": "notes.md"}]}
        recorded = await call(
            client,
            "known_good_config",
            verb="record",
            model=str(LLAMA8B),
            engine_version="0.26.0",  # as the boot log says it
            knobs={"enforce_eager": True},
            **entry,
        )
        assert recorded["replaced"], "0.26.0 is the key the A/B's 0.26.0 or 0.26.0+cpu entry has: one release"
        found = await call(
            client, "known_good_config", verb="lookup", model=str(LLAMA8B), hardware=here, engine_version=CPU_BUILD
        )
        assert found["found"] and "the local build suffix +cpu is the same release" in found["note"], found
        assert found == await call(
            client, "known_good_lookup", model=str(LLAMA8B), hardware=here, engine_version=CPU_BUILD
        )

        dry = await call(client, "ab_run", spec=ab("ab2", env.port), dry_run=True)
        use = dry["result"]["known_good"]
        assert use["applied"] and "enforce_eager True" in use["added"], use
        assert f"engine version {CPU_BUILD} matched the entry's 0.26.0" in use["note"], use["note"]

        other = {"model": str(QWEN32B), "engine_version": "0.26.0", "knobs": {"enforce_eager": True}}
        await call(client, "known_good_config", verb="record", **other, **(entry | {"hardware": "NVIDIA H100"}))
        dry = await call(client, "ab_run", spec=ab("ab3", env.port, QWEN32B), dry_run=True)
        use = dry["result"]["known_good"]
        assert not use["applied"] and f"differs in hardware NVIDIA H100 (this run: {here})" in use["note"], use["note"]
        missed = await call(
            client,
            "known_good_config",
            verb="lookup",
            model=str(QWEN32B),
            hardware="NVIDIA H100",
            engine_version="0.25.1",
        )
        assert not missed["found"] and "differs in engine version 0.26.0 (this run: 0.25.1)" in missed["note"], missed
    assert not fake_servers(env.port)
