"""Hardening classes 1, 2, 3 and 6 through the real MCP server, in-process and over stdio.

1. code execution through knobs: refused flags and env, and the server config's widening, which an
   agent cannot give itself and which every rung it touches records;
2. owned flags smuggled in another spelling;
3. a big log parsed away from the event loop: the other calls keep answering, a shutdown is not held;
6. a rung whose port another process already serves is crash_env "port taken" and leaves nothing running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from bench.parse_throughput import synthetic_log
from redline.ops.request_base import MAX_TEXT
from redline.server.app import build_server
from tests.conftest import processes_naming
from tests.server.conftest import _stop_left_servers
from tests.server.helpers import (
    Env,
    call,
    call_error,
    fake_servers,
    init_args,
    new_ladder,
    write_env,
    write_targets,
)

pytestmark = pytest.mark.anyio
LADDER = "ladders/l8b.yml"
SLEEP_MODE = "--enable-sleep-mode"  # a real vLLM option that is not one of redline's serving levers
WIDEN = {"vllm": {"flags": [SLEEP_MODE]}}


def stdio(env: Env) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


# ---- 1. code execution through knobs ------------------------------------------------------------------


async def test_code_execution_through_knobs_a_widened_flag_is_refused_without_the_server_config(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        said = await call_error(
            client, "ladder_init", **init_args(LADDER, fixed={"port": env.port, "extra_flags": [SLEEP_MODE]})
        )
    assert "is refused" in said and "widen" in said and "server config" in said
    assert not (env.workspace / LADDER).exists()


@pytest.fixture
def wide(tmp_path: Path) -> Iterator[Env]:
    """A server config that widens vLLM by one flag; the servers its rungs leave up are stopped after."""
    yield write_env(tmp_path / "wide", widen=WIDEN)
    anyio.run(_stop_left_servers, tmp_path)


async def test_code_execution_through_knobs_the_server_config_widens_and_the_rung_records_it(wide: Env) -> None:
    env = wide
    async with Client(build_server(env.config)) as client:
        await call(client, "ladder_init", **init_args(LADDER, fixed={"port": env.port, "extra_flags": [SLEEP_MODE]}))
        job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=60)
    rung = job["result"]["rung"]
    assert rung["status"] == "boot_ok" and rung["widened"] == [f"flag {SLEEP_MODE} (enable_sleep_mode)"]
    assert "enable_sleep_mode" in (env.workspace / LADDER).read_text()  # in the ladder file, for good


async def test_code_execution_through_knobs_a_ladder_widened_elsewhere_does_not_boot_here(
    tmp_path: Path, wide: Env
) -> None:
    """A ladder made under a widening config, run by a server without it: a tool error before any job."""
    async with Client(build_server(wide.config)) as client:
        await call(client, "ladder_init", **init_args(LADDER, fixed={"port": wide.port, "extra_flags": [SLEEP_MODE]}))
    narrow = write_env(tmp_path / "narrow")
    (narrow.workspace / "ladders").mkdir(parents=True)
    (narrow.workspace / LADDER).write_text((wide.workspace / LADDER).read_text())
    async with Client(build_server(narrow.config)) as client:
        said = await call_error(client, "rung_run", ladder=LADDER, target="local", wait_s=30)
        assert (await call(client, "job_list"))["jobs"] == []  # refused before any job existed
    assert SLEEP_MODE in said and "widen" in said
    assert not (narrow.root / "target").exists() and not fake_servers(wide.port)


async def test_code_execution_through_knobs_a_hand_edited_ladder_cannot_override_the_target_env(env: Env) -> None:
    write_targets(env, VLLM_LOGGING_LEVEL="INFO")  # the target sets it: the ladder may not
    async with Client(build_server(env.config)) as client:
        fixed = {"port": env.port, "env": {"VLLM_LOGGING_LEVEL": "DEBUG"}}
        await call(client, "ladder_init", **init_args(LADDER, fixed=fixed))
        said = await call_error(client, "rung_run", ladder=LADDER, target="local", wait_s=30)
    assert "VLLM_LOGGING_LEVEL" in said and "target's env wins" in said
    assert not fake_servers(env.port)


@pytest.mark.parametrize(
    ("flag", "env_name", "why"),
    [
        ("--trust-remote-code", None, "runs the model repository's own Python code"),
        ("--worker-extension-cls=evil.Ext", None, "loads Python code"),
        (None, "LD_PRELOAD", "changes which code the loader"),
        (None, "HF_ENDPOINT", "changes where code and files come from"),
    ],
)
async def test_code_execution_through_knobs_refused_with_the_reason(
    env: Env, flag: str | None, env_name: str | None, why: str
) -> None:
    fixed = {
        "port": env.port,
        **({"extra_flags": [flag]} if flag else {}),
        **({"env": {env_name: "x"}} if env_name else {}),
    }
    async with Client(build_server(env.config)) as client:
        said = await call_error(client, "ladder_init", **init_args(LADDER, fixed=fixed))
    assert why in said and "refused" in said


async def test_code_execution_through_knobs_over_stdio_refused_then_widened_and_recorded(
    tmp_path: Path, wide: Env
) -> None:
    narrow = write_env(tmp_path / "narrow")
    async with Client(stdio(narrow)) as client:
        said = await call_error(
            client, "ladder_init", **init_args(LADDER, fixed={"port": narrow.port, "extra_flags": [SLEEP_MODE]})
        )
    assert "is refused" in said
    async with Client(stdio(wide)) as client:
        await call(client, "ladder_init", **init_args(LADDER, fixed={"port": wide.port, "extra_flags": [SLEEP_MODE]}))
        job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=60)
    assert job["result"]["rung"]["widened"] == [f"flag {SLEEP_MODE} (enable_sleep_mode)"]


def test_code_execution_through_knobs_a_widening_must_name_a_real_option_the_config_does_not_own(
    tmp_path: Path,
) -> None:
    for i, (widen, said) in enumerate(
        (
            ({"vllm": {"flags": ["--max-model"]}}, "a knob the serve config owns"),
            ({"vllm": {"flags": ["--no-such-flag"]}}, "is not a `vllm serve` option"),
            ({"nosuch": {"flags": []}}, "unknown engine"),
        )
    ):
        env_dir = tmp_path / f"c{i}"
        env_dir.mkdir()
        (env_dir / "targets.yml").write_text("targets: {}\n")
        config = env_dir / "redline-server.yml"
        config.write_text(json.dumps({"workspace": "ws", "targets": "targets.yml", "widen": widen}))
        done = subprocess.run(
            [sys.executable, "-m", "redline", "mcp", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 2 and said in done.stderr and "widen" in done.stderr, done.stderr


# ---- 2. owned flags smuggled in ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "flag",
    [
        "--max-model=1024",  # a prefix argparse takes for --max-model-len
        "--max_model_len=1024",  # underscores
        "--gpu-memory-util=0.5",
        "--compilation-config.cudagraph_mode=NONE",  # a dotted sub-key of a JSON-valued flag the config owns
        "--port=22",
        "--host=0.0.0.0",
        "--kv_cache_dtype=fp8",
        "--tensor-parallel=2",
    ],
)
async def test_owned_flags_smuggled_in_another_spelling_are_refused_over_mcp(env: Env, flag: str) -> None:
    async with Client(build_server(env.config)) as client:
        said = await call_error(
            client, "ladder_init", **init_args(LADDER, fixed={"port": env.port, "extra_flags": [flag]})
        )
    assert "a knob the serve config owns" in said, said
    assert not (env.workspace / LADDER).exists()


async def test_owned_flags_smuggled_in_a_hand_edited_ladder_never_boot(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        path = env.workspace / LADDER
        text = path.read_text()
        path.write_text(text.replace("  extra_flags: []", "  extra_flags: [--max_num_batched=1]"))
        assert "--max_num_batched=1" in path.read_text()
        said = await call_error(client, "rung_run", ladder=LADDER, target="local", wait_s=30)
    assert "max_num_batched_tokens" in said and "owns" in said
    assert not (env.root / "target").exists() and not fake_servers(env.port)


# ---- 3. parsers off the event loop --------------------------------------------------------------------


async def test_parsers_off_the_event_loop_a_cheap_call_answers_while_a_64_mb_log_is_parsed(env: Env) -> None:
    text = synthetic_log(64)
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        latencies: list[float] = []
        done = anyio.Event()

        async def parse() -> None:
            signals = await call(client, "parse_boot_log", text=text)
            assert signals["status"] == "boot_ok"
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(parse)
            await anyio.sleep(0.2)
            while not done.is_set():
                t0 = time.perf_counter()
                await call(client, "ladder_next_rung", ladder=LADDER)
                latencies.append(time.perf_counter() - t0)
    latencies.sort()
    assert len(latencies) > 50, latencies  # it answered all along, not once the parse was over
    # bench/mcp_concurrency.py measures about 5 ms (a parse in a thread: about 80 ms); a loaded CI host gets slack
    assert latencies[int(0.99 * len(latencies))] < 0.1, latencies[-5:]


def _workers() -> set[int]:
    """This process's worker processes (anyio.to_process), alive."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rpartition(")")[2].split()
            if (
                entry.name.isdigit()
                and int(stat[1]) == os.getpid()
                and stat[0] not in "ZX"
                and b"anyio.to_process" in (entry / "cmdline").read_bytes()
            ):
                found.add(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


async def test_parsers_off_the_event_loop_a_big_log_goes_to_a_worker_process_that_a_cancel_kills(env: Env) -> None:
    """Not a thread: a thread holds the GIL (the loop stalls) and cannot be stopped (a shutdown would wait)."""
    text = synthetic_log(64)
    async with Client(build_server(env.config)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "parse_boot_log", {"text": text})
            with anyio.fail_after(30):
                while not (workers := _workers()):
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)  # parsing now: 64 MB take seconds
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):  # the cancelled call's worker is killed, not waited for
            while workers & _workers():
                await anyio.sleep(0.05)
        assert (await call(client, "job_list"))["jobs"] == []  # the server goes on


async def test_parsers_off_the_event_loop_a_text_over_the_cap_is_refused_with_the_cap(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        said = await call_error(client, "parse_boot_log", text="x" * (MAX_TEXT + 1))
    assert str(MAX_TEXT) in said


# ---- 6. the server that answers is ours ------------------------------------------------------------


def _neighbour(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """A plain HTTP server on the port, answering /health 200: another process, not the rung's."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "health").write_text("ok")
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the neighbour server did not come up")


@pytest.mark.parametrize("transport", ["in-process", "stdio"])
async def test_the_server_that_answers_is_ours_a_served_port_is_port_taken_and_nothing_runs(
    env: Env, transport: str
) -> None:
    write_targets(env, FAKE_VLLM_BOOT_S="2")  # the neighbour answers long before the rung's server could
    neighbour = _neighbour(env.root / "neighbour", env.port)
    try:
        async with Client(build_server(env.config) if transport == "in-process" else stdio(env)) as client:
            await new_ladder(client, env)
            job = await call(client, "rung_run", ladder=LADDER, target="local", wait_s=60)
            assert job["done"], job
            status = await call(client, "ladder_status", ladder=LADDER)
        rung = job["result"]["rung"]
        assert rung["status"] == "crash_env" and "port taken" in rung["reason"], rung["reason"]
        assert str(neighbour.pid) in rung["reason"]
        assert status["rows"][0]["status"] == "crash_env"
        assert neighbour.poll() is None  # the neighbour is not ours to stop
        assert not fake_servers(env.port) and not processes_naming(env.root / "target")  # nothing of ours runs
        assert not (env.workspace / "ladders" / "l8b.runs" / "server.json").exists()
    finally:
        neighbour.kill()
        neighbour.wait()
