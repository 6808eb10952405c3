"""`redline mcp` with no config file: the user's data folder as the workspace, this host as the only target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from redline.cli.mcp import CONFIG_ENV
from redline.server.config import default_workspace
from tests.server.helpers import Env, call, call_error, init_args

pytestmark = pytest.mark.anyio
INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
)


def bare_env(home: Path, **more: str) -> dict[str, str]:
    """This process's environment with another HOME and no config named anywhere."""
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", CONFIG_ENV)}
    return {**env, "HOME": str(home), **more}


def test_the_default_workspace_is_in_the_user_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_workspace() == tmp_path / ".local" / "share" / "redline" / "workspace"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_workspace() == tmp_path / "data" / "redline" / "workspace"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # the XDG spec says to ignore a relative one
    assert default_workspace() == tmp_path / ".local" / "share" / "redline" / "workspace"


async def test_with_no_config_the_server_works_in_the_default_workspace_on_local_only(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    cwd.mkdir()
    params = StdioServerParameters(command=sys.executable, args=["-m", "redline", "mcp"], env=bare_env(home), cwd=cwd)
    async with Client(params) as client:
        await call(client, "ladder_init", **init_args("ladders/l8b.yml"))
        refused = await call_error(client, "rung_run", ladder="ladders/l8b.yml", target="h200")
        outside = await call_error(client, "ladder_status", ladder="../../../../etc/passwd.yml")
    assert (home / ".local" / "share" / "redline" / "workspace" / "ladders" / "l8b.yml").is_file()
    assert "unknown target 'h200'" in refused and "known targets: local." in refused
    assert "must be a path inside the workspace" in outside
    assert list(cwd.iterdir()) == []  # nothing written where the client happened to start it


def test_with_no_config_one_stderr_line_says_where_and_how_to_narrow(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "redline", "mcp"],
        input=INIT,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=bare_env(tmp_path, XDG_DATA_HOME=str(tmp_path / "data")),
    )
    notice = [line for line in done.stderr.splitlines() if line.startswith("redline mcp: no config file")]
    assert len(notice) == 1, done.stderr
    workspace = tmp_path / "data" / "redline" / "workspace"
    assert f"the workspace is {workspace}" in notice[0] and "the only target is `local`" in notice[0]
    assert "--config FILE" in notice[0] and CONFIG_ENV in notice[0]
    assert done.stdout.startswith('{"jsonrpc":"2.0"')


def test_a_config_file_still_narrows_it(env: Env, tmp_path: Path) -> None:
    """Named by $REDLINE_SERVER_CONFIG (or --config, or ./redline-server.yml): its workspace and targets, no notice."""
    done = subprocess.run(
        [sys.executable, "-m", "redline", "mcp"],
        input=INIT,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=bare_env(tmp_path, **{CONFIG_ENV: str(env.config_path)}),
    )
    assert "no config file" not in done.stderr
    assert f"workspace {env.workspace}, targets {env.root / 'targets.yml'}" in done.stderr
    (tmp_path / "redline-server.yml").write_text(
        json.dumps({"workspace": str(env.workspace), "targets": "targets.yml"})
    )
    (tmp_path / "targets.yml").write_text((env.root / "targets.yml").read_text())
    done = subprocess.run(
        [sys.executable, "-m", "redline", "mcp"],
        input=INIT,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=bare_env(tmp_path),
    )
    assert "no config file" not in done.stderr and f"workspace {env.workspace}" in done.stderr
