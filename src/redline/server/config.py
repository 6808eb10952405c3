"""The MCP server's one config file, and the rule that keeps tool paths inside its workspace.

    workspace: ./work             # ladders, runs and campaigns; tool arguments name files in here
    targets: ./targets.yml        # the targets file (see redline.targets.config)
    http:
      bearer_token_env: REDLINE_MCP_TOKEN   # needed to serve HTTP on any address but loopback

Relative paths are taken from the config file's folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from redline.inputs import load_yaml
from redline.errors import InputError

STATE_DIR = ".redline"  # the server's own state inside the workspace (jobs); no tool argument may name it
MAX_NAME = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class HttpConfig(BaseModel):
    """How the HTTP transport authenticates callers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bearer_token_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    def bearer_token(self) -> str | None:
        """The token from the environment variable the config names; None when none is named."""
        if self.bearer_token_env is None:
            return None
        token = os.environ.get(self.bearer_token_env, "")
        if len(token) < 16:
            raise InputError(
                f"http.bearer_token_env names {self.bearer_token_env}, which is unset or shorter than 16 "
                f"characters; export {self.bearer_token_env}=<a long random token> before starting the server"
            )
        return token


class ServerConfig(BaseModel):
    """The whole server config file, with absolute paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workspace: Path
    targets: Path
    http: HttpConfig = HttpConfig()

    @property
    def state_dir(self) -> Path:
        return self.workspace / STATE_DIR


def load_server_config(path: str | Path) -> ServerConfig:
    """Read and check the server config; create the workspace folder if it is missing."""
    path = Path(path).expanduser()
    config = load_yaml(path, ServerConfig, "the server config", hint="; pass --config FILE")
    base = path.parent
    workspace = (base / config.workspace.expanduser()).resolve()
    targets = (base / config.targets.expanduser()).resolve()
    try:
        workspace.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the workspace {workspace}: {exc.strerror or exc}") from exc
    if not targets.is_file():
        raise InputError(f"the targets file {targets} named in {path} does not exist; create it or fix `targets:`")
    return config.model_copy(update={"workspace": workspace, "targets": targets})


def resolve_in_workspace(workspace: Path, name: str, *, what: str = "path") -> Path:
    """The absolute path of `name` inside the workspace, or InputError.

    Refused: an empty or over-long name, control characters, an absolute path,
    `..`, a part starting with `-`, the server's own `.redline` folder, and a path
    whose symlinks lead out of the workspace.
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{what} must be a non-empty path inside the workspace, such as ladders/llama8b.yml")
    shown = name if len(name) <= 80 else name[:77] + "..."
    hint = f"{what} {shown!r} must be a path inside the workspace (relative, such as ladders/llama8b.yml)"
    if len(name) > MAX_NAME:
        raise InputError(f"{what} is {len(name)} characters long; {hint}, at most {MAX_NAME} characters")
    if _CONTROL.search(name):
        raise InputError(f"{hint}, without control characters")
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith("~"):
        raise InputError(f"{hint}, not an absolute path")
    if ".." in pure.parts:
        raise InputError(f"{hint}, without '..'")
    if any(part.startswith("-") for part in pure.parts):
        raise InputError(f"{hint}, with no part starting with '-'")
    if pure.parts and pure.parts[0] == STATE_DIR:
        raise InputError(f"{hint}; {STATE_DIR}/ holds the server's own state and is not a tool's to touch")
    root = workspace.resolve()
    resolved = (root / pure).resolve()
    if not resolved.is_relative_to(root):
        raise InputError(f"{hint}: it is a symlink that leads out of the workspace, to {resolved}")
    if resolved == root:
        raise InputError(f"{hint}, naming a file, not the workspace itself")
    return resolved


def relative_name(workspace: Path, path: Path) -> str:
    """How a tool names a file inside the workspace (the inverse of resolve_in_workspace)."""
    return path.resolve().relative_to(workspace.resolve()).as_posix()
