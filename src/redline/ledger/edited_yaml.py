"""The YAML files a person also edits (known-good.yml, the known-good registry; baselines.yml): read and updated
through one reader and one locked writer, ruamel round-trip, comments kept.

    entries = read_edited(path, KnownGoodFile, "known-good registry")        # empty when the file is missing
    update_edited(path, BaselinesFile, "baselines file", HEADER, change)     # locked read-modify-write

A read goes through the untrusted-YAML checks (size, aliases, depth) before it is parsed.
A write changes only what differs (yamlfile.merge), so a person's comments and key
order survive, and goes through the one atomic writer under FILE.lock.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from redline.errors import InputError, LadderError
from redline.inputs import explain
from redline.ledger import yamlfile
from redline.ledger.atomic import atomic_write

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def _document(path: Path, what: str) -> Any:
    try:
        return yamlfile.load(path)
    except LadderError as exc:  # the YAML reader's wording, for this file
        raise InputError(f"{what}: {exc}") from exc


def _validate(doc: Any, model: type[M], path: Path, what: str) -> M:
    if doc is None:
        return model()
    if not isinstance(doc, dict):
        raise InputError(f"{what} {path} must be a YAML mapping; fix it by hand or move it away")
    try:
        return model.model_validate(yamlfile.plain(doc))
    except ValidationError as exc:
        raise InputError(f"{what} {path} is invalid: {explain(exc)}; fix it by hand") from exc


def read_edited(path: Path, model: type[M], what: str) -> M:
    """The file at path as `model`, checked; an empty one when there is no file yet."""
    if not path.exists():
        return model()
    return _validate(_document(path, what), model, path, what)


def update_edited(path: Path, model: type[M], what: str, header: str, change: Callable[[M], tuple[M, T]]) -> T:
    """Read, change and write the file under its lock; `change` returns the new content and the result."""
    with yamlfile.locked(path):
        doc = _document(path, what) if path.exists() else None
        current = _validate(doc, model, path, what)
        updated, result = change(current)
        new = updated.model_dump(mode="json", exclude_none=True)
        if doc is None:
            doc = yamlfile.to_yaml(new)
            doc.yaml_set_start_comment(header)
        else:
            doc = yamlfile.merge(doc, yamlfile.plain(doc), new)
        atomic_write(path, yamlfile.dumps(doc))
    return result


__all__ = ["read_edited", "update_edited"]
