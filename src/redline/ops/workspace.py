"""Paths a spec names inside the workspace (an A/B arm's campaign, a baseline's source): resolved, kept inside."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from redline.errors import InputError


def inside(workspace: Path, name: str, what: str) -> Path:
    """`name` (relative to the workspace) as an absolute path inside it, or InputError saying what to write."""
    hint = f"{what}: {name[:80]!r} must be a relative path inside the workspace, such as campaigns/c1.yml"
    pure = PurePosixPath(name.replace("\\", "/"))
    if not name.strip() or pure.is_absolute() or name.startswith("~") or ".." in pure.parts:
        raise InputError(hint)
    if any(part.startswith("-") for part in pure.parts):
        raise InputError(f"{hint}, with no part starting with '-'")
    root = workspace.resolve()
    resolved = (root / pure).resolve()
    if not resolved.is_relative_to(root) or resolved == root:
        raise InputError(f"{hint}; it leads to {resolved}")
    return resolved


def relative(workspace: Path, path: Path) -> str:
    """How a result names a file of the workspace."""
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path)


__all__ = ["inside", "relative"]
