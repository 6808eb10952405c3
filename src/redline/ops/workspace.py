"""The one path checker: every name that becomes a path in the workspace goes through `inside`.

    inside(workspace, "campaigns/c1.yml", "campaign")                                 # a tool's argument
    inside(workspace, "../ladders/l8b.yml", "base.from_ladder", base=campaign_folder)  # a name a file gives

A tool's argument (ladder, campaign, log_file, bench_file, from_ladder, from_campaign, an arm's campaign) and a
name a file gives (a campaign's base.from_ladder) are checked as they will be opened: nothing expands `~` or a
variable. A name is refused by its form (empty, over-long, control characters, absolute or `~`, a part starting
with `-`, and `..` in a tool's argument), then walked part by part from its base, a symlink followed only while
it stays inside the workspace (its link is read; nothing outside is looked at): the first step that leaves the
workspace refuses the name. So a refusal names only what was given, in the same words whether or not anything
outside exists, and never where a link leads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from redline.errors import InputError
from redline.server_config import STATE_DIR

MAX_NAME = 1024
MAX_LINKS = 40  # symlinks followed in one name, as the kernel's own limit
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:77] + "...")


def _form(name: str, relative_to_file: bool) -> str | None:
    """What is wrong with the name as written, or None."""
    pure = PurePosixPath(name.replace("\\", "/"))
    if len(name) > MAX_NAME:
        return f", at most {MAX_NAME} characters (it has {len(name)})"
    if _CONTROL.search(name):
        return ", without control characters"
    if pure.is_absolute() or name.startswith("~"):
        return ", not an absolute path or ~"
    if ".." in pure.parts and not relative_to_file:
        return ", without '..'"
    if any(part.startswith("-") for part in pure.parts):
        return ", with no part starting with '-'"
    return None


def _link(path: Path, root: Path) -> tuple[Path, list[str]] | None:
    """Where the symlink at path (inside root) leads, as a folder to go on from and the parts still to walk;
    None when its target is an absolute path outside root (nothing there is looked at)."""
    target = PurePosixPath(os.readlink(path))
    if not target.is_absolute():
        return path.parent, list(target.parts)
    lexical = Path(os.path.normpath(target))
    if not lexical.is_relative_to(root):
        return None
    return root, list(lexical.relative_to(root).parts)


_OUT_BY_DOTDOT = "its '..' leads out of the workspace"
_OUT_BY_LINK = "it is a symlink that leads out of the workspace (or a loop of them)"


def _walk(root: Path, start: Path, parts: list[str]) -> tuple[Path, str | None]:
    """Where parts lead from start, symlinks followed while they stay in root: (path, None), else (_, what left)."""
    path, links = start, 0
    todo = [(part, False) for part in parts]  # (part, read from a link)
    while todo:
        part, linked = todo.pop(0)
        if part in ("", "."):
            continue
        path = path.parent if part == ".." else path / part
        if not path.is_relative_to(root):
            return path, _OUT_BY_LINK if linked else _OUT_BY_DOTDOT
        if part != ".." and path.is_symlink():
            links += 1
            followed = _link(path, root) if links <= MAX_LINKS else None
            if followed is None:
                return path, _OUT_BY_LINK
            path, rest = followed
            todo = [(p, True) for p in rest] + todo
    return path, None


def inside(
    workspace: Path, name: str, what: str, *, base: Path | None = None, example: str = "campaigns/c1.yml"
) -> Path:
    """`name` as an absolute path inside the workspace, or one InputError naming `what` and what to write.

    `base`: the folder a file's name is relative to (a campaign's, for its base.from_ladder); `..` may then be
    written, as long as the path stays inside. Without it the name is a tool's, relative to the workspace.
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{what} must be a non-empty path inside the workspace, such as {example}")
    relative = "relative" if base is None else "relative to the file that names it"
    hint = f"{what} {_shown(name)} must be a path inside the workspace ({relative}, such as {example})"
    if (problem := _form(name, base is not None)) is not None:
        raise InputError(hint + problem)
    root = workspace.resolve()
    start = root if base is None else base.resolve()
    path, left = _walk(root, start, list(PurePosixPath(name.replace("\\", "/")).parts))
    if not start.is_relative_to(root):
        left = "the file that names it is outside the workspace"
    if left is not None:
        raise InputError(f"{hint}; {left}")
    parts = path.relative_to(root).parts
    if not parts:
        raise InputError(f"{hint}, naming a file, not the workspace itself")
    if parts[0] == STATE_DIR:
        raise InputError(f"{hint}; {STATE_DIR}/ holds the server's own state and is not a tool's to touch")
    return path


# Where redline keeps its own records in a workspace: the first folder of a path, a file at its root, a folder name
RECORD_FOLDERS = {
    "ladders": "a ladder or its rung files (ladders/)",
    "campaigns": "a campaign file or its results (campaigns/)",
    "ab": "an A/B's spec or its trial records (ab/)",
}
RECORD_FILES = {
    "baselines.yml": "the recorded baselines (baselines.yml)",
    "known-good.yml": "the known-good registry (known-good.yml)",
    "frontier.yml": "the frontier of levers (frontier.yml)",
}
# What a record holds at its top, wherever it is: (keys it has, what it is)
RECORD_KEYS = (
    ({"schema_version"}, "a record redline writes (it carries schema_version)"),
    ({"floor", "rungs"}, "a ladder"),
    ({"ab", "arm", "trial"}, "an A/B's trial record"),
    ({"campaign", "cell", "verdict"}, "a campaign cell's verdict"),
    ({"base", "cells"}, "a campaign file"),
    ({"base", "grid"}, "a campaign file"),
    ({"arms", "trials"}, "an A/B's spec"),
)


def own_record(workspace: Path, path: Path, doc: object = None) -> str | None:
    """What `path` (inside the workspace, links followed) is where it is one of redline's own records (a ladder, a
    campaign file or its results, an A/B's files, baselines.yml, known-good.yml, frontier.yml, a `.runs` folder's),
    by where it is or by what its parsed document `doc` holds at its top; None: none of them."""
    parts = path.resolve().relative_to(workspace.resolve()).parts
    if parts and parts[0] in RECORD_FOLDERS:
        return RECORD_FOLDERS[parts[0]]
    if len(parts) == 1 and parts[0] in RECORD_FILES:
        return RECORD_FILES[parts[0]]
    if any(part.endswith(".runs") for part in parts[:-1]):
        return "a ladder's run folder (.runs)"
    keys = set(doc) if isinstance(doc, dict) else set()
    return next((what for needs, what in RECORD_KEYS if needs <= keys), None)


def layout_workspace(path: Path) -> Path | None:
    """The workspace a person's ladder, campaign or A/B file sits in by the layout (ladders/, campaigns/, ab/ under
    it); None for a file elsewhere. What a command at a terminal passes where it names no workspace: the one place
    a workspace is read from a file's folders."""
    return path.parent.parent if path.parent.name in ("ladders", "campaigns", "ab") else None


def workspace_of(path: Path) -> Path:
    """The workspace a ladder or campaign file lives in, by the layout (else its own folder): the one a call that
    names none (a person's file at a terminal) is checked against."""
    return layout_workspace(path) or path.parent


def relative(workspace: Path, path: Path) -> str:
    """How a result names a file of the workspace."""
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path)


__all__ = [
    "MAX_NAME",
    "RECORD_FILES",
    "RECORD_FOLDERS",
    "inside",
    "layout_workspace",
    "own_record",
    "relative",
    "workspace_of",
]
