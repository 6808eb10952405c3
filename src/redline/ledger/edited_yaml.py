"""The YAML files a person also edits (known-good.yml, the known-good registry; baselines.yml): read and updated
through one reader and one locked writer, ruamel round-trip, comments kept.

    BASELINES_FILE = EditedFile("baselines.yml", BaselinesFile, "baselines file", header)   # one per kind
    BASELINES_FILE.read(path)                 # the file as its model; an empty one when it is missing
    BASELINES_FILE.update(path, change)       # locked read-modify-write

A read goes through the untrusted-YAML checks (size, aliases, depth) before it is parsed.
A write changes only what differs (yamlfile.merge), so a person's comments and key
order survive, and goes through the one atomic writer under FILE.lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from redline.errors import InputError, LadderError
from redline.ledger import yamlfile
from redline.ledger.atomic import atomic_write
from redline.validation_text import explain_line

_M = TypeVar("_M", bound=BaseModel)
_T = TypeVar("_T")


def _document(path: Path, what: str) -> Any:
    try:
        return yamlfile.load(path)
    except LadderError as exc:  # the YAML reader's wording, for this file
        raise InputError(f"{what}: {exc}") from exc


def _validate(doc: Any, model: type[_M], path: Path, what: str) -> _M:
    if doc is None:
        return model()
    if not isinstance(doc, dict):
        raise InputError(f"{what} {path} must be a YAML mapping; fix it by hand or move it away")
    try:
        return model.model_validate(yamlfile.plain(doc))
    except ValidationError as exc:
        raise InputError(f"{what} {path} is invalid: {explain_line(exc)}; fix it by hand") from exc


@dataclass(frozen=True)
class EditedFile(Generic[_M]):
    """One kind of file a person also edits: its name in the workspace, its shape, what an error calls it, and the
    comment a new one starts with."""

    name: str
    model: type[_M]
    what: str
    header: str

    def read(self, path: Path) -> _M:
        """The file at path, checked; an empty one when there is no file yet."""
        if not path.exists():
            return self.model()
        return _validate(_document(path, self.what), self.model, path, self.what)

    def update(self, path: Path, change: Callable[[_M], tuple[_M, _T]]) -> _T:
        """Read, change and write the file under its lock; `change` returns the new content and the result."""
        with yamlfile.locked(path):
            doc = _document(path, self.what) if path.exists() else None
            current = _validate(doc, self.model, path, self.what)
            updated, result = change(current)
            new = updated.model_dump(mode="json", exclude_none=True)
            if doc is None:
                doc = yamlfile.to_yaml(new)
                doc.yaml_set_start_comment(self.header)
            else:
                doc = yamlfile.merge(doc, yamlfile.plain(doc), new)
            atomic_write(path, yamlfile.dumps(doc))
        return result


__all__ = ["EditedFile"]
