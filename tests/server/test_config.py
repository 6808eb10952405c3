"""The server config file and the workspace rule every tool path goes through."""

import os
from pathlib import Path

import pytest

from redline.errors import InputError
from redline.server.config import load_server_config, resolve_in_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "ladders").mkdir(parents=True)
    return ws


def test_a_relative_name_resolves_inside_the_workspace(workspace: Path) -> None:
    assert resolve_in_workspace(workspace, "ladders/l8b.yml") == workspace.resolve() / "ladders" / "l8b.yml"
    assert resolve_in_workspace(workspace, "./l8b.yml") == workspace.resolve() / "l8b.yml"


@pytest.mark.parametrize("name", ["/etc/passwd", "/tmp/x.yml", "~/ladder.yml", "\\\\server\\share"])
def test_absolute_ladder_path_is_refused(workspace: Path, name: str) -> None:
    with pytest.raises(InputError, match="must be a path inside the workspace"):
        resolve_in_workspace(workspace, name, what="ladder")


@pytest.mark.parametrize("name", ["../x.yml", "ladders/../../x.yml", "a/../../../etc/passwd", "..", "..\\x.yml"])
def test_dotdot_escape_is_refused(workspace: Path, name: str) -> None:
    with pytest.raises(InputError, match="inside the workspace.*without '..'"):
        resolve_in_workspace(workspace, name)


def test_symlink_leaving_the_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    (workspace / "dangling.yml").symlink_to(tmp_path / "nowhere.yml")
    for name in ("escape/ladder.yml", "dangling.yml"):
        with pytest.raises(InputError, match="symlink that leads out of the workspace"):
            resolve_in_workspace(workspace, name)


def test_symlink_staying_inside_the_workspace_is_allowed(workspace: Path) -> None:
    (workspace / "current").symlink_to(workspace / "ladders")
    assert resolve_in_workspace(workspace, "current/l.yml") == workspace.resolve() / "ladders" / "l.yml"


@pytest.mark.parametrize("name", ["-rf", "ladders/--help", "--output=/etc/passwd"])
def test_flag_like_path_is_refused(workspace: Path, name: str) -> None:
    with pytest.raises(InputError, match="starting with '-'"):
        resolve_in_workspace(workspace, name)


@pytest.mark.parametrize("name", ["", "   ", "a\x00b", "l\n.yml", "x" * 5000, ".", "ladders/.."])
def test_empty_control_or_overlong_path_is_refused(workspace: Path, name: str) -> None:
    with pytest.raises(InputError, match="workspace"):
        resolve_in_workspace(workspace, name)


def test_server_state_folder_is_not_a_tool_path(workspace: Path) -> None:
    with pytest.raises(InputError, match=".redline/ holds the server's own state"):
        resolve_in_workspace(workspace, ".redline/jobs/j-1.json")


def write_config(tmp_path: Path, text: str) -> Path:
    (tmp_path / "targets.yml").write_text("targets:\n  local: {kind: local}\n")
    path = tmp_path / "server.yml"
    path.write_text(text)
    return path


def test_config_paths_are_taken_from_the_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    config = load_server_config(write_config(tmp_path, "workspace: work\ntargets: targets.yml\n"))
    assert config.workspace == (tmp_path / "work").resolve() and config.workspace.is_dir()
    assert config.targets == (tmp_path / "targets.yml").resolve()
    assert config.http.bearer_token_env is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("workspace: w\n", "targets: Field required"),
        (
            "workspace: w\ntargets: targets.yml\nport: 1\n",
            "port: unknown field; write one of adopt_from, http, models_from, targets, widen, workspace, or leave it out",
        ),
        ("workspace: w\ntargets: missing.yml\n", "does not exist"),
        ("[1, 2]\n", "must be a mapping"),
        ("workspace: [\n", "not valid YAML"),
        ("workspace: w\ntargets: targets.yml\nhttp: {bearer_token_env: 'A B'}\n", "http.bearer_token_env"),
    ],
)
def test_a_bad_config_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_server_config(write_config(tmp_path, text))


def test_a_missing_config_says_how_to_name_one(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--config"):
        load_server_config(tmp_path / "nope.yml")


def test_bearer_token_comes_from_the_named_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path, "workspace: w\ntargets: targets.yml\nhttp: {bearer_token_env: RL_TOKEN}\n")
    http = load_server_config(path).http
    monkeypatch.delenv("RL_TOKEN", raising=False)
    with pytest.raises(InputError, match="export RL_TOKEN"):
        http.bearer_token()
    monkeypatch.setenv("RL_TOKEN", "short")
    with pytest.raises(InputError, match="shorter than 16"):
        http.bearer_token()
    monkeypatch.setenv("RL_TOKEN", "t" * 32)
    assert http.bearer_token() == "t" * 32
    assert os.environ["RL_TOKEN"] not in repr(load_server_config(path))
