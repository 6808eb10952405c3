"""YAML files a person also edits: ruamel round-trip, one writer at a time.

Round-trip keeps a person's comments, key order and quoting. Writes go through
ledger.atomic (a kill at any moment leaves the old file or the new one).
Read-modify-write cycles hold a FileLock on FILE.lock.
"""

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout
from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from redline.errors import InputError, LadderError, RedlineError
from redline.ledger.derived import check_file
from redline.untrusted import MAX_YAML_BYTES, MAX_YAML_NODES, parse_yaml, parse_yaml_as_written, read_regular
from redline.validation_text import explain_line

_M = TypeVar("_M", bound=BaseModel)

LOCK_TIMEOUT_S = 60.0
FIX = "; fix it by hand or restore it"


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.width = 4096  # one reason, one line: easier to read and to grep
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    return yaml


def read(path: Path, what: str | None = None) -> str:
    """The file's text, size-capped, a plain file (a FIFO or device refused without blocking); parse() checks it as
    untrusted YAML (size, nodes, aliases, depth, long integers) before anything builds it. `what`: how messages name
    the file (default: its path)."""
    what = what or str(path)
    try:
        return read_regular(path, MAX_YAML_BYTES, what, LadderError)
    except FileNotFoundError as exc:
        raise LadderError(f"{what}: no such file; create it with `redline ladder init`") from exc
    except OSError as exc:
        raise LadderError(f"{what}: cannot be read ({exc.strerror})") from exc


def parse(text: str, path: Path, max_nodes: int = MAX_YAML_NODES) -> Any:
    """The round-trip document in `text` (read from `path`), or a LadderError that says what is wrong."""
    return parse_yaml(text, str(path), LadderError, loader=_yaml(), hint=FIX, max_nodes=max_nodes)


def load(path: Path) -> Any:
    return parse(read(path), path)


def parse_as_written(text: str, what: str, error: type[RedlineError] = LadderError) -> tuple[Any, Callable[[Any], str]]:
    """A file redline did not write (a deploy's values; `what` names it in messages), as read(): its round-trip
    document, and a dumper that writes it back with the file's own indentation, so that a write changes only the
    lines it edits."""
    yaml = _yaml()
    doc, sequence, offset = parse_yaml_as_written(text, what, error, yaml)
    mapping = _mapping_indent(text) or 2
    offset = 2 if offset is None else offset
    yaml.indent(mapping=mapping, sequence=max(sequence or mapping + offset, offset + 2), offset=offset)

    def dump(document: Any) -> str:
        buffer = io.StringIO()
        yaml.dump(document, buffer)
        return buffer.getvalue()

    return doc, dump


def _mapping_indent(text: str) -> int | None:
    """How far a nested mapping's keys are indented past their parent's, from the first that is."""
    parent: int | None = None
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        indent = len(line) - len(body)
        if parent is not None and indent > parent and not body.startswith("- "):
            return indent - parent
        parent = indent if body.rstrip().endswith(":") and not body.startswith("- ") else None
    return None


def load_plain(path: Path) -> Any:
    """The document as plain dicts and lists, for reading only: the C loader is about 6x faster than
    round-trip, which only a write needs (to keep a person's comments and key order)."""
    return parse_plain(read(path), path)


def load_model(path: Path, model: type[_M], what: str, hint: str) -> _M:
    """A file redline wrote, read into its model; a bad one refused naming the file, what it should be (`what`: "a
    search log") and `hint`: how to start over."""
    try:
        return model.model_validate(load_plain(path))
    except LadderError as exc:
        raise InputError(f"{exc}{hint}") from exc
    except ValidationError as exc:
        raise InputError(f"{path}: not {what} ({explain_line(exc)}){hint}") from exc


def parse_plain(text: str, path: Path, max_nodes: int = MAX_YAML_NODES) -> Any:
    """`text` as plain dicts and lists (the C loader); an error worded as parse() words it."""
    return parse_yaml(text, str(path), LadderError, hint=FIX, max_nodes=max_nodes)


def dumps(doc: Any) -> str:
    buffer = io.StringIO()
    _yaml().dump(doc, buffer)
    return buffer.getvalue()


def to_yaml(value: Any) -> Any:
    """Plain dicts and lists as round-trip nodes, so new parts dump in block style like the rest."""
    if isinstance(value, dict):
        return CommentedMap((k, to_yaml(v)) for k, v in value.items())
    if isinstance(value, list):
        return CommentedSeq(to_yaml(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """A round-trip node as plain dicts, lists and scalars, for validation."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def merge(node: Any, old: Any, new: Any) -> Any:
    """`node` changed in place from `old` to `new`, touching only what differs (comments survive)."""
    if isinstance(node, dict) and isinstance(new, dict) and isinstance(old, dict):
        for key in [k for k in node if k not in new]:
            del node[key]
        for key, value in new.items():
            if key not in node:
                node[key] = to_yaml(value)
            elif old.get(key) != value:
                node[key] = merge(node[key], old.get(key), value)
        return node
    if isinstance(node, list) and isinstance(new, list) and isinstance(old, list):
        for i, value in enumerate(new):
            if i >= len(node):
                node.append(to_yaml(value))
            elif i >= len(old) or old[i] != value:
                node[i] = merge(node[i], old[i] if i < len(old) else None, value)
        del node[len(new) :]
        return node
    return to_yaml(new)


def remove_stale_temps(path: Path) -> None:
    """Temp files a killed writer left; call it holding the lock, when no live writer can have one."""
    for temp in path.parent.glob(f".{path.name}.*.tmp"):
        temp.unlink(missing_ok=True)


def lock_file(path: Path) -> Path:
    return path.with_name(f"{path.name}.lock")


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold FILE.lock: one read-modify-write of `path` at a time, across processes.

    The lock file is derived: a symlink, FIFO or device in its place is refused, never opened.
    """
    name = lock_file(path)
    check_file(name)
    lock = FileLock(name, timeout=timeout)
    try:
        lock.acquire()
    except Timeout as exc:
        raise LadderError(
            f"{path}: another redline has held {name.name} for over {timeout:.0f} s; wait and retry"
        ) from exc
    except OSError as exc:
        raise LadderError(
            f"{path}: cannot take the lock {name} ({exc.strerror or exc}); remove it if it is not a plain file"
        ) from exc
    try:
        yield
    finally:
        lock.release()
