"""The one results layout of every experiment: a folder per measured boot, its record written last.

    <results>/<units>/<unit>/<record>       the boot's record: its presence means the boot is done
    <results>/<units>/<unit>/server.json    its server while it runs, recorded before its boot is waited on
    <results>/<units>/<unit>/boot.log, bench-*.json, ...   what its boot and benches left
    <results>/<lock>                        held by the one runner of the experiment

A campaign is `campaigns/<name>/cells/<cell>/verdict.yml` (lock campaign.lock), an A/B `ab/<name>/trials/<arm>-<k>/
trial.yml` (lock ab.lock). Every file is written whole by the one derived writer (ledger/derived.py), the results
folder and each folder below it checked from `base` right before each write, so one swapped for a symlink during a
run (which lasts hours) is refused then. A server record an older runner left at the results folder's top
(server.json, before records went per boot) is still found, and stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from redline.ledger import yamlfile
from redline.ledger.derived import derived_dir, derived_file, derived_write
from redline.models.slug import plain_name

_M = TypeVar("_M", bound=BaseModel)
_READ: dict[tuple[str, type[BaseModel]], tuple[tuple[int, int, int], BaseModel]] = {}  # records already read
MAX_KEPT = 4096  # records kept read: a few campaigns' worth

SERVER = "server.json"


@dataclass(frozen=True)
class Results:
    """Where one experiment's files live: `base` / `folder`, a folder per boot under `units`."""

    base: Path  # the folder every derived path is checked from
    folder: str  # the results folder, relative to base
    units: str  # the folder of the boots: cells, trials
    record: str  # each boot's record: verdict.yml, trial.yml
    lock: str  # the runner's lock: campaign.lock, ab.lock
    word: str  # what one boot is called in messages: cell, trial

    @property
    def root(self) -> Path:
        return self.base / self.folder

    @property
    def lock_file(self) -> Path:
        return self.root / self.lock

    def unit_dir(self, unit: str) -> Path:
        return self.root / self.units / plain_name(unit, self.word)  # a name, never a path

    def record_file(self, unit: str) -> Path:
        return self.unit_dir(unit) / self.record

    def server_file(self, unit: str) -> Path:
        """Where the record of the unit's running server is kept: one per unit, as units may run at once."""
        return self.unit_dir(unit) / SERVER

    def server_files(self) -> list[Path]:
        """Every server record a runner left, by unit (and the one file of a runner from before they went per unit)."""
        units = derived_dir(self.root, self.units)
        found = sorted(units.glob(f"*/{SERVER}")) if units.is_dir() else []
        legacy = self.root / SERVER
        return [legacy, *found] if legacy.exists() else found

    def relative(self, path: Path) -> str:
        return path.relative_to(self.base).as_posix()

    def checked(self, path: Path, *, create: bool = False) -> Path:
        """One of the experiment's files: every folder from base down real ones (made when `create`), the file
        absent or a plain one; DerivedPathError otherwise (a symlink there could lead out of the workspace)."""
        return derived_file(self.base, self.relative(path), create=create)

    def write(self, path: Path, text: str) -> Path:
        """One of the experiment's files written whole, its folders checked right before."""
        return derived_write(self.base, self.relative(path), text)

    def write_unit_file(self, unit: str, name: str, text: str) -> Path:
        """A boot's side file (boot.log, bench-c8.json)."""
        return self.write(self.unit_dir(unit) / name, text)

    def write_record(self, unit: str, record: BaseModel) -> Path:
        """The boot's record, written last: its presence means the boot is done."""
        return self.write(self.record_file(unit), yamlfile.dumps(yamlfile.to_yaml(record.model_dump(mode="json"))))

    def read_record(self, unit: str, shape: type[_M]) -> _M | None:
        """The boot's record, None when it has none (the boot is not done); read as untrusted input, an InputError
        naming the file and how to run the boot again. A record read before, its file unchanged since (the same
        inode, time and size), is not parsed again: the one object is returned, to be read, never changed."""
        path = self.checked(self.record_file(unit))
        try:
            seen = path.stat()
        except FileNotFoundError:
            return None
        stamp, key = (seen.st_ino, seen.st_mtime_ns, seen.st_size), (str(path), shape)
        kept = _READ.get(key)
        if kept is not None and kept[0] == stamp:  # the same file as last read: a record is written whole, once
            return kept[1]  # type: ignore[return-value]
        hint = f"; delete {path.parent} to run the {self.word} again"
        record = yamlfile.load_model(path, shape, f"a {self.word} record", hint)
        if len(_READ) >= MAX_KEPT:
            _READ.pop(next(iter(_READ)))
        _READ[key] = (stamp, record)
        return record


__all__ = ["SERVER", "Results"]
