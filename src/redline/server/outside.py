"""What the MCP server may read outside its workspace, each only where its config says (a person's choice, never a
tool argument): a ladder to adopt (`adopt_from:`, docs/security.md 20.8) and a model's config.json to predict from
(`models_from:`, 38.9). Links are resolved before the check, and a refusal says the same words whether or not the
path exists, so neither tool is an oracle of the host's files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from redline.errors import InputError
from redline.server.config import ServerConfig


def adopt_source(config: ServerConfig, source: str, in_workspace: Callable[[str, str], Path]) -> Path:
    """The ladder file ladder_adopt may read: a path inside the workspace (`in_workspace`, the one path checker), or
    an absolute one under a folder the config's `adopt_from:` names (links resolved first); InputError saying what
    to do otherwise."""
    if not source.startswith("/"):
        return in_workspace(source, "source")
    if any(ord(c) < 32 or ord(c) == 127 for c in source):
        raise InputError("source: write the ladder file's path without control characters")
    path = Path(source).resolve()
    if any(path.is_relative_to(folder.resolve()) for folder in config.adopt_from):
        return path
    allowed = ", ".join(str(f) for f in config.adopt_from) or "none"
    raise InputError(
        f"source: {source[:200]!r} is outside the workspace and outside every folder the server config's "
        f"adopt_from: names ({allowed}); ask whoever runs the server to add its folder there, or copy the "
        "ladder with its .runs folder into the workspace and name it by its path there"
    )


def model_folder(config: ServerConfig, model: str) -> None:
    """Refuse a model folder memory_predict would read on the server's host outside the workspace and every folder
    the config's `models_from:` names (links resolved first, as the read would follow them); a hub id passes (no
    folder is read for it)."""
    if not model.startswith(("/", ".", "~")):
        return
    if any(ord(c) < 32 or ord(c) == 127 for c in model):
        raise InputError("model: write the model folder's path without control characters")
    folder = Path(model).expanduser().absolute().resolve()
    if any(folder.is_relative_to(f.resolve()) for f in (config.workspace, *config.models_from)):
        return
    named = ", ".join(str(f) for f in config.models_from) or "none"
    raise InputError(
        f"model: {model[:200]!r} is outside the workspace and every folder the server config's models_from: names "
        f"({named}); ask whoever runs the server to add its folder there, or give the model's config.json as "
        "model_config_file (a file in the workspace)"
    )


__all__ = ["adopt_source", "model_folder"]
