"""The rules that keep tool paths inside the server's workspace; the config file itself is redline/server_config.py.

path = resolve_in_workspace(config.workspace, "ladders/llama8b.yml", what="ladder")
ladder_path(workspace, name); relative_name(workspace, path)
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from redline.errors import InputError
from redline.server_config import STATE_DIR, ServerConfig, default_workspace, load_server_config  # re-exported (*)

MAX_NAME = 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
LADDER_SUFFIXES = (".yml", ".yaml")
LADDER_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=,-]*$")


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


def ladder_path(workspace: Path, name: str) -> Path:
    """A ladder file: inside the workspace, a .yml, and named in plain characters (it ends up in commands and logs)."""
    path = resolve_in_workspace(workspace, name, what="ladder")
    if path.suffix not in LADDER_SUFFIXES:
        raise InputError(f"ladder {name[:80]!r} must be a .yml file inside the workspace, such as ladders/llama8b.yml")
    if not all(LADDER_PART.match(part) for part in PurePosixPath(name).parts):
        raise InputError(
            f"ladder {name[:80]!r}: name ladder files and folders with letters, digits and . _ - + @ = , "
            "only, starting with a letter or digit"
        )
    return path


def relative_name(workspace: Path, path: Path) -> str:
    """How a tool names a file inside the workspace (the inverse of resolve_in_workspace)."""
    return path.resolve().relative_to(workspace.resolve()).as_posix()


# (*) for the server modules and tests that still name them here; redline.server_config is where they live.
__all__ = [
    "LADDER_PART",
    "LADDER_SUFFIXES",
    "MAX_NAME",
    "STATE_DIR",
    "ServerConfig",
    "default_workspace",
    "ladder_path",
    "load_server_config",
    "relative_name",
    "resolve_in_workspace",
]
