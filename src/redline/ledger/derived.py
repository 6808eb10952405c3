"""Derived paths: the folders and files redline makes itself beside what a person names.

    <ladder>.runs/  rung-NNN/boot.log, smoke.json   server.json   <ladder>.yml.lock
    .redline/jobs/  j-*.json   .start.lock

They are checked like tool arguments, since anyone who can write to the workspace can
plant something there: every part below the base folder must be a real folder (a symlink
could lead out of the workspace, and whatever redline wrote would land there), and a
file must be absent or a plain file (a FIFO would block a read, a device would take a
write, a symlink would be followed). So nothing is written outside, and no read hangs.

A run lasts hours, and a folder checked at its start may be swapped for a symlink between two
of its writes: `derived_write`, the one way a derived file is written, checks the whole path
again right before each write (campaign cells, A/B trials, ladder rungs, server records).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from redline.errors import DerivedPathError
from redline.ledger.atomic import atomic_write

_FIX = "redline makes it itself; remove it and call again"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink (it could lead out of the workspace)"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a folder" if stat.S_ISDIR(mode) else "a plain file"


def derived_dir(base: Path, *parts: str, create: bool = False) -> Path:
    """base/parts..., each part a real folder, made when `create` and missing; DerivedPathError otherwise.

    A missing part without `create` is fine: there is nothing under it yet to follow. The base is the caller's (a
    workspace, a campaign's folder): made when `create` and missing, never checked.
    """
    if create:
        base.mkdir(parents=True, exist_ok=True)
    path = base
    for part in parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if not create:
                return base.joinpath(*parts)
            try:
                os.mkdir(path)
            except FileExistsError:
                pass  # another writer made it just now: look at what it is
            mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            raise DerivedPathError(f"{path} is {_kind(mode)}, not a folder: {_FIX}")
    return path


def check_file(path: Path) -> Path:
    """A derived file: absent, or a plain file (never a symlink, FIFO or device); DerivedPathError otherwise."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISREG(mode):
        raise DerivedPathError(f"{path} is {_kind(mode)}, where redline keeps a plain file of its own: {_FIX}")
    return path


def derived_file(base: Path, relative: str, *, create: bool = False) -> Path:
    """base/relative, a derived file: its folders checked (made when `create`), the file itself as check_file."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise DerivedPathError(f"{relative!r} is not a path under {base}")
    folder = derived_dir(base, *parts[:-1], create=create)
    return check_file(folder / parts[-1])


def derived_write(base: Path, relative: str, text: str) -> Path:
    """Write base/relative whole (the one atomic writer), checked right before: its folders real ones part by part
    (made where missing), the file absent or a plain one. A folder swapped for a symlink since the last write is
    refused then (DerivedPathError), and nothing is written through it."""
    path = derived_file(base, relative, create=True)
    atomic_write(path, text)
    return path
