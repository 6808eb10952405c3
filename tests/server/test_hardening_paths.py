"""Hardening class 9, through the real MCP server in-process and over stdio: derived paths.

The folders and files redline derives itself (`<ladder>.runs/`, `rung-NNN/`, `server.json`, the ladder's
`.lock`, `.redline/jobs/` and the job files) are checked like tool arguments: a symlink (out of the
workspace or not), a FIFO or a device in their place is refused with an error that says what to remove,
nothing outside the workspace changes, and no call blocks on a FIFO.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from redline.errors import DerivedPathError
from redline.server.app import build_server
from tests.server.helpers import Env, call, call_error, fake_servers, hand_run_log, new_ladder

pytestmark = pytest.mark.anyio
LADDER = "ladders/l8b.yml"


def tree(path: Path) -> dict[str, str]:
    """Every entry under path, with its content's hash (a FIFO or folder by kind), without opening a FIFO."""
    out = {}
    for p in sorted(path.rglob("*")):
        kind = "fifo" if p.is_fifo() else "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        out[str(p.relative_to(path))] = kind
    return out


@pytest.fixture
def outside(env: Env) -> Path:
    """A folder next to the workspace, with a file a write through a symlink would change."""
    folder = env.root / "outside"
    folder.mkdir()
    (folder / "victim.txt").write_text("do not touch\n")
    return folder


def stdio(env: Env) -> StdioServerParameters:
    argv = ["-m", "redline", "mcp", "--config", str(env.config_path)]
    return StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ))


async def refused(client: Client, tool: str, **args: object) -> str:
    with anyio.fail_after(20):  # refused at once, never blocked on a FIFO
        return await call_error(client, tool, **args)


async def boot_log(client: Client, env: Env) -> str:
    """The log of the boot the ladder wants next, as a person would paste it: rung_record would take it."""
    step = await call(client, "ladder_next_rung", ladder=LADDER)
    return hand_run_log(step["command"], env)


def runs(env: Env) -> Path:
    return env.workspace / "ladders" / "l8b.runs"


# ---- <ladder>.runs and what is in it ---------------------------------------------------------------------

Plant = Callable[[Env, Path], None]


def runs_symlink_out(env: Env, outside: Path) -> None:
    runs(env).symlink_to(outside, target_is_directory=True)


def rung_folder_symlink_out(env: Env, outside: Path) -> None:
    runs(env).mkdir()
    (runs(env) / "rung-001").symlink_to(outside, target_is_directory=True)


def boot_log_fifo(env: Env, outside: Path) -> None:
    (runs(env) / "rung-001").mkdir(parents=True)
    os.mkfifo(runs(env) / "rung-001" / "boot.log")


def lock_symlink_out(env: Env, outside: Path) -> None:
    lock = env.workspace / "ladders" / "l8b.yml.lock"
    lock.unlink(missing_ok=True)  # ladder_init left the real one
    lock.symlink_to(outside / "victim.txt")


PLANTS: dict[str, tuple[Plant, str]] = {
    "<ladder>.runs is a symlink out": (runs_symlink_out, "symlink"),
    "rung-001 is a symlink out": (rung_folder_symlink_out, "symlink"),
    "boot.log is a FIFO": (boot_log_fifo, "FIFO"),
    "the ladder's lock is a symlink out": (lock_symlink_out, "symlink"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
async def test_derived_paths_a_planted_link_or_fifo_refuses_the_record_and_nothing_outside_changes(
    env: Env, outside: Path, plant: str
) -> None:
    make, word = PLANTS[plant]
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        log = await boot_log(client, env)
        ladder_before = (env.workspace / LADDER).read_text()
        make(env, outside)
        before = tree(outside)
        said = await refused(client, "rung_record", ladder=LADDER, log_text=log)
        assert word in said and "remove it" in said, said
        said = await refused(client, "rung_run", ladder=LADDER, target="local", wait_s=30)
        assert word in said, said
        assert (await call(client, "job_list"))["jobs"] == []  # refused before any job, so before any boot
        assert (await call(client, "ladder_status", ladder=LADDER))["rows"] == []
    assert tree(outside) == before and (env.workspace / LADDER).read_text() == ladder_before
    assert not (env.root / "target").exists() and not fake_servers(env.port)


async def test_derived_paths_a_runs_symlink_out_refuses_every_ladder_tool_before_any_boot(
    env: Env, outside: Path
) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        runs_symlink_out(env, outside)
        before = tree(outside)
        for tool, args in (
            ("rung_run", {"target": "local", "wait_s": 30}),
            ("smoke_test", {"wait_s": 30}),
            ("ceiling_record", {}),
        ):
            said = await refused(client, tool, ladder=LADDER, **args)
            assert "l8b.runs is a symlink" in said, (tool, said)
        assert (await call(client, "job_list"))["jobs"] == []  # refused before any job
        (env.workspace / "ladders" / "new.runs").symlink_to(outside, target_is_directory=True)
        said = await refused(
            client,
            "ladder_init",
            ladder="ladders/new.yml",
            model="m",
            model_path="/models/m",
            floor_max_model_len=4096,
            floor_max_num_batched_tokens=2048,
        )
        assert "new.runs is a symlink" in said
    assert tree(outside) == before and not (env.root / "target").exists() and not fake_servers(env.port)
    assert not (env.workspace / "ladders" / "new.yml").exists()


async def test_derived_paths_a_server_record_fifo_is_refused_without_blocking(env: Env, outside: Path) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env, policy="doubling")
        runs(env).mkdir()
        os.mkfifo(runs(env) / "server.json")
        try:
            for tool, args in (("rung_run", {"target": "local", "wait_s": 30}), ("ceiling_record", {})):
                said = await refused(client, tool, ladder=LADDER, **args)
                assert "server.json is a FIFO" in said, (tool, said)
        finally:
            (runs(env) / "server.json").unlink()  # the env fixture reads every server.json left behind
    assert not fake_servers(env.port)


async def test_derived_paths_a_fifo_named_as_a_log_file_is_refused_without_blocking(env: Env) -> None:
    async with Client(build_server(env.config)) as client:
        await new_ladder(client, env)
        os.mkfifo(env.workspace / "boot.log")
        said = await refused(client, "rung_record", ladder=LADDER, log_file="boot.log")
    assert "not a regular file" in said


async def test_derived_paths_over_stdio_a_runs_symlink_out_is_refused(env: Env, outside: Path) -> None:
    async with Client(stdio(env)) as client:
        await new_ladder(client, env)
        log = await boot_log(client, env)
        runs_symlink_out(env, outside)
        before = tree(outside)
        said = await refused(client, "rung_record", ladder=LADDER, log_text=log)
    assert "l8b.runs is a symlink" in said and tree(outside) == before


# ---- the job folder and the job files ---------------------------------------------------------------------


@pytest.mark.parametrize("linked", [".redline", ".redline/jobs"])
def test_derived_paths_a_job_folder_symlink_out_stops_the_server_from_starting(
    env: Env, outside: Path, linked: str
) -> None:
    place = env.workspace / linked
    place.parent.mkdir(parents=True, exist_ok=True)
    place.symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    with pytest.raises(DerivedPathError, match=f"{linked.split('/')[-1]} is a symlink .* remove it"):
        build_server(env.config)
    done = subprocess.run(
        [sys.executable, "-m", "redline", "mcp", "--config", str(env.config_path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2 and "is a symlink" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert tree(outside) == before


async def test_derived_paths_a_job_file_symlink_is_refused_and_not_followed(env: Env, outside: Path) -> None:
    job_id = "j-20261130T100000Z-0000beef"
    (outside / "job.json").write_text(
        json.dumps(
            {
                "id": job_id,
                "tool": "rung_run",
                "state": "succeeded",
                "owner_pid": 1,
                "created_at": "2026-11-30T10:00:00+00:00",
            }
        )
    )
    jobs = env.config.state_dir / "jobs"
    jobs.mkdir(parents=True)
    (jobs / f"{job_id}.json").symlink_to(outside / "job.json")
    fifo_id = "j-20261130T100000Z-0000f1f0"
    os.mkfifo(jobs / f"{fifo_id}.json")
    before = tree(outside)
    async with Client(build_server(env.config)) as client:
        assert "is a symlink" in await refused(client, "job_status", job_id=job_id)
        assert "not a regular file" in await refused(client, "job_status", job_id=fifo_id)
        with anyio.fail_after(20):
            assert (await call(client, "job_list"))["jobs"] == []  # neither is listed, neither blocks
    assert tree(outside) == before
