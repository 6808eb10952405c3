"""A third-party client: the MCP Inspector's CLI mode against `redline mcp` over stdio, with no config.

It runs the commands docs/mcp.md shows (the block after its `inspector-test` marker), as they are
written, from the repository root: list the tools, call a read-only tool, and get a refusal.
scripts/install-inspector.sh installs the Inspector (and the Node 22 it needs) into .inspector/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.server.scenario import EVERY_TOOL

pytestmark = pytest.mark.inspector
ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "mcp.md"
MARKER = "<!-- inspector-test:"
SETUP = re.compile(r"^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=")


def documented_block() -> list[str]:
    """The lines of the first ```bash block after the marker in docs/mcp.md."""
    text = DOCS.read_text()
    assert MARKER in text, f"{DOCS} lost its {MARKER} marker"
    block = re.search(r"```bash\n(.*?)```", text[text.index(MARKER) :], re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def installed() -> bool:
    return any((ROOT / ".inspector").glob(".installed-*"))


@pytest.fixture
def inspector() -> None:
    if installed():
        return
    if os.environ.get("CI") == "true":
        pytest.fail("the MCP Inspector is not installed: scripts/test runs scripts/install-inspector.sh first")
    pytest.skip("the MCP Inspector is not installed (scripts/install-inspector.sh)")


def run(setup: list[str], command: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "REDLINE_SERVER_CONFIG")}
    script = "\n".join(["set -euo pipefail", *setup, command])
    return subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=120
    )


def check(command: str, out: str) -> str:
    """What the command showed, checked; the kind of call it was."""
    if "tools/list" in command:
        assert {t["name"] for t in json.loads(out)["tools"]} == EVERY_TOOL
        return "list"
    result = json.loads(out)
    if "--tool-name job_list" in command:
        assert result["isError"] is False and result["structuredContent"] == {"jobs": []}
        return "read-only call"
    if "--tool-name ladder_status" in command:
        assert result["isError"] is True
        assert "must be a path inside the workspace" in result["content"][0]["text"]
        return "refusal"
    raise AssertionError(f"the test does not know what {command!r} should show")


def test_the_inspector_lists_calls_and_is_refused_as_docs_mcp_md_shows(inspector: None, tmp_path: Path) -> None:
    lines = documented_block()
    setup = [line for line in lines if SETUP.match(line)]
    seen = []
    for command in (line for line in lines if not SETUP.match(line)):
        done = run(setup, command, tmp_path)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        if "$I " in command:
            seen.append(check(command, done.stdout))
    assert seen == ["list", "read-only call", "refusal"]
    assert (tmp_path / ".local" / "share" / "redline" / "workspace").is_dir()  # the default workspace, no config


INSPECTOR = [
    ".inspector/node_modules/.bin/node",
    ".inspector/node_modules/@modelcontextprotocol/inspector/cli/build/index.js",
]


def test_http_token_the_inspector_over_http_sends_it_with_header(inspector: None, tmp_path: Path) -> None:
    """The Inspector against `redline mcp --http`: refused without the bearer token, served with
    `--header "Authorization: Bearer <token>"` (the Inspector CLI's way to send a header)."""
    import socket
    import sys
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "inspector-token-0123456789abcdef"
    (tmp_path / "token").write_text(token)
    (tmp_path / "token").chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_DATA_HOME", "REDLINE_SERVER_CONFIG")}
    env["HOME"] = str(tmp_path)
    argv = [
        sys.executable,
        "-m",
        "redline",
        "mcp",
        "--http",
        "--port",
        str(port),
        "--token-file",
        str(tmp_path / "token"),
    ]
    server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        call = [*INSPECTOR, url, "--transport", "http", "--method", "tools/call", "--tool-name", "job_list"]
        refused = subprocess.run(call, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert refused.returncode != 0 and "missing or wrong bearer token" in refused.stderr
        done = subprocess.run(
            [*call, "--header", f"Authorization: Bearer {token}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["structuredContent"] == {"jobs": []}
    finally:
        server.terminate()
        server.wait(timeout=30)
