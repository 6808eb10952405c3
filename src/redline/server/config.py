"""The rules that keep tool paths inside the server's workspace; the config file itself is redline/server_config.py.

path = resolve_in_workspace(config.workspace, "ladders/llama8b.yml", what="ladder")
ladder_path(workspace, name); relative_name(workspace, path)
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from redline.errors import InputError
from redline.ops.workspace import MAX_NAME, inside
from redline.server_config import STATE_DIR, ServerConfig, default_workspace, load_server_config  # re-exported (*)

LADDER_SUFFIXES = (".yml", ".yaml")
LADDER_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=,-]*$")


# What each kind of file a tool names looks like, and how one that lives outside the workspace comes in
EXAMPLES = {
    "ladder": "ladders/llama8b.yml",
    "campaign": "campaigns/llama8b-h200.yml",
    "log_file": "logs/boot.log",
    "bench_file": "logs/bench.json",
}
ELSEWHERE = {
    "ladder": "a ladder climbed outside the workspace comes in with ladder_adopt (it copies the ladder and its rung "
    "files)",
    "campaign": "write one with campaign_init, or copy the file into campaigns/",
    "log_file": "paste the log as log_text instead, or copy the file into the workspace",
    "bench_file": "paste the result as bench_json_text instead, or copy the file into the workspace",
}


def resolve_in_workspace(workspace: Path, name: str, *, what: str = "path") -> Path:
    """The absolute path of `name` inside the workspace, or InputError: the one path checker (ops/workspace.py),
    its example of the kind of file named, and, for a file outside the workspace, how it comes in.

    Refused: an empty or over-long name, control characters, an absolute path or `~`, `..`, a part starting
    with `-`, the server's own `.redline` folder, and a path whose symlinks lead out of the workspace.
    """
    try:
        return inside(workspace, name, what, example=EXAMPLES.get(what, "notes/file.txt"))
    except InputError as exc:
        pure = PurePosixPath(str(name).replace("\\", "/"))
        outside = pure.is_absolute() or str(name).startswith("~") or ".." in pure.parts or "leads out" in str(exc)
        if not outside or what not in ELSEWHERE:
            raise
        raise InputError(f"{exc}; {ELSEWHERE[what]}") from None


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
    "ELSEWHERE",
    "EXAMPLES",
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
