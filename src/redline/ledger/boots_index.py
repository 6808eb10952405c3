"""A workspace's index of its recorded boots: a line per record that holds boots (a ladder file, a campaign cell's
verdict, an A/B trial's record), with its kind and engine, so what learns from them (the memory model) reads the
records it names instead of walking the workspace's folders for every plan.

    entries = read_index(workspace, relative)       # None: no index yet (its reader builds it whole: write_index)
    add_entry(workspace, relative, Entry("cell", "campaigns/c1/cells/a/verdict.yml", "vllm"))  # a record written

A record written adds its line (appended whole, so writers in several processes do not lose each other's); an index
that is absent is built again from the folders by its reader. A line that does not read (a torn write) is passed
over. The file is the workspace's own state: its folders are checked to be real ones, as every derived path.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from redline.ledger.derived import derived_file, derived_write

MAX_INDEX_BYTES = 64 << 20  # a few hundred thousand lines: far beyond what a person's workspace holds
_READ: dict[str, tuple[tuple[int, int, int], list[Entry]]] = {}  # each index as last read, by its file's stamp


@dataclass(frozen=True)
class Entry:
    """One record that holds boots: its kind (ladder, cell, trial), its path in the workspace, its engine (None: a
    record from before records named theirs, read for every engine)."""

    kind: str
    path: str
    engine: str | None

    def line(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":")) + "\n"


def _entry(line: str) -> Entry | None:
    try:
        doc = json.loads(line)
        kind, path, engine = doc["kind"], doc["path"], doc["engine"]
    except (ValueError, TypeError, KeyError):
        return None
    ok = isinstance(kind, str) and isinstance(path, str) and (engine is None or isinstance(engine, str))
    return Entry(kind, path, engine) if ok else None


def read_index(workspace: Path, relative: str) -> list[Entry] | None:
    """The index's entries, each once, in the order written; None when there is no index. One read while the file
    is unchanged (the same inode, time and size)."""
    path = derived_file(workspace, relative)
    try:
        seen = path.stat()
    except FileNotFoundError:
        return None
    stamp = (seen.st_ino, seen.st_mtime_ns, seen.st_size)
    kept = _READ.get(str(path))
    if kept is not None and kept[0] == stamp:
        return kept[1]
    with path.open("rb") as f:
        text = f.read(MAX_INDEX_BYTES).decode("utf-8", errors="replace")
    entries = list(dict.fromkeys(e for line in text.splitlines() if (e := _entry(line)) is not None))
    _READ[str(path)] = (stamp, entries)
    return entries


def write_index(workspace: Path, relative: str, entries: list[Entry]) -> None:
    """The index written whole (built from the folders), atomically."""
    derived_write(workspace, relative, "".join(e.line() for e in entries))


def add_entry(workspace: Path, relative: str, entry: Entry) -> None:
    """A record just written: its line appended where the index exists and lacks it (where there is none, its next
    read builds it from the folders, this record among them)."""
    entries = read_index(workspace, relative)
    if entries is None or entry in entries:
        return
    path = derived_file(workspace, relative)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.write(fd, entry.line().encode())  # one write of one line: appends of other writers stay whole
    finally:
        os.close(fd)


__all__ = ["Entry", "add_entry", "read_index", "write_index"]
