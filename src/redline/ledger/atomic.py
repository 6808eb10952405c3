"""The one way redline replaces a file: a kill at any moment leaves the old file or the new one.

The text goes to a temporary file in the same folder, is flushed and fsynced,
replaces the old file with os.replace (atomic on POSIX), and the folder is
fsynced so the rename itself survives a crash.
"""

import os
import tempfile
from pathlib import Path


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8), keeping its mode; temp files are `.NAME.*.tmp` beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
