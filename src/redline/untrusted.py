"""Checks every YAML or JSON text passes before a parser builds objects from it.

A file in the workspace may have been written by anyone. A deep nest of brackets
makes the YAML parser quadratic and Python's recursion overflow; an alias
bomb (`&a [*b, *b]` ten levels deep) expands to billions of nodes when walked.
A flat list of millions of short items under the size cap takes minutes and gigabytes
to build. So a text is size-capped, then its events are read (in C where ruamel.yaml.clib
is there) only until an alias, a nest deeper than MAX_DEPTH or the node past
MAX_YAML_NODES shows up, before any object is built.
"""

import errno
import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml import events as ev
from ruamel.yaml.error import YAMLError
from ruamel.yaml.util import load_yaml_guess_indent

from redline.errors import InputError, RedlineError

MAX_DEPTH = 64  # no redline file nests deeper than about 8; a person's never comes near this
MAX_YAML_BYTES = 16 << 20  # a ladder of a thousand rungs is about 5 MB
# Values, lists and mappings one YAML text may hold: a ladder of a thousand rungs has about 150,000. The walk stops at
# the first one past it, so a flat list of millions of items is refused in a fraction of a second, never built.
MAX_YAML_NODES = 400_000
# A file a person writes by hand (a campaign, an A/B spec, the targets file, the server config): a campaign of its 256
# cells, each with its levers, holds about 5,000. Walking the events costs about a microsecond each (several on a busy
# host), so such a file past it is refused in a tenth of a second.
CONFIG_YAML_NODES = 50_000
MAX_JSON_BYTES = 64 << 20  # the largest bench result file read
MAX_DIGITS = 4300  # Python's own limit on an integer's digits (sys.get_int_max_str_digits): past it a parser crashes
_INTEGER = re.compile(r"^[-+]?(0[xob])?[0-9a-fA-F_]+$")
_LONG_JSON_NUMBER = re.compile(r'"([^"\\]{1,80})"[ \t\r\n]{0,80}:[ \t\r\n]{0,80}-?[0-9]{' + str(MAX_DIGITS + 1) + "}")

try:
    from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]  # ruamel re-exports the C class untyped
except ImportError:  # pragma: no cover - only where the C extension is missing
    CParser = None

_STARTS = (ev.SequenceStartEvent, ev.MappingStartEvent)
_ENDS = (ev.SequenceEndEvent, ev.MappingEndEvent)
_NODES = (ev.ScalarEvent, *_STARTS)


class _PureEvents:  # pragma: no cover - only where the C extension is missing
    """The pure-Python parser's events behind the C parser's two calls."""

    def __init__(self, text: str) -> None:
        self._events = YAML(typ="safe", pure=True).parse(io.StringIO(text))
        self._next: ev.Event | None = None

    def check_event(self) -> bool:
        self._next = next(self._events, None)
        return self._next is not None

    def get_event(self) -> ev.Event:
        assert self._next is not None
        return self._next


def _parser(text: str) -> Any:
    """A parser whose check_event() and get_event() give the text's events one by one, in C where it can."""
    return CParser(io.StringIO(text)) if CParser is not None else _PureEvents(text)


def parse_yaml(
    text: str,
    what: str,
    error: type[RedlineError] = InputError,
    *,
    loader: YAML | None = None,
    hint: str = "",
    max_nodes: int = MAX_YAML_NODES,
) -> Any:
    """The one way redline parses a YAML text (a ladder, a campaign, an A/B spec, a search log, a targets file, the
    server config, a deploy's values, a packaged file): check_yaml's checks first, then `loader` (default: the safe C
    loader, plain dicts and lists; a round-trip YAML keeps comments) builds it. Not valid YAML is `error` naming `what`,
    the line and the column, then `hint` (how to fix it). tests/test_yaml_reader.py fails if any other module parses
    YAML. `max_nodes`: the node budget (CONFIG_YAML_NODES for a file a person writes)."""
    problem = _walk(text, what, error, max_nodes)
    if problem is None:
        try:
            return (loader or YAML(typ="safe")).load(text)
        except YAMLError as exc:  # what the events allow and the loader does not (a duplicate key)
            problem = exc
    raise error(f"{what}: not valid YAML{_where(problem)}{hint}") from problem


def parse_yaml_as_written(
    text: str, what: str, error: type[RedlineError], loader: YAML, max_nodes: int = MAX_YAML_NODES
) -> tuple[Any, Any, Any]:
    """parse_yaml with a round-trip `loader` that also guesses the text's own indentation (a file redline did not
    write, to write back changing only the lines it edits): the document, its sequence indent and its offset."""
    problem = _walk(text, what, error, max_nodes)
    if problem is None:
        try:
            return load_yaml_guess_indent(text, yaml=loader)  # type: ignore[no-any-return]
        except YAMLError as exc:
            problem = exc
    raise error(f"{what}: not valid YAML{_where(problem)}") from problem


def _where(exc: YAMLError) -> str:
    """` at line L, column C (what is wrong)`, as the parser says it."""
    mark = getattr(exc, "problem_mark", None)
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"{at} ({getattr(exc, 'problem', None) or exc})"


def check_yaml(text: str, what: str, error: type[RedlineError] = InputError, max_nodes: int = MAX_YAML_NODES) -> None:
    """Refuse a YAML text that is too big, holds more than MAX_YAML_NODES nodes, uses an alias, or nests deeper than
    MAX_DEPTH. Text that is not valid YAML passes: the parser that comes next says where (parse_yaml: this walk's own
    error, so nothing past the point it stopped is ever built)."""
    _walk(text, what, error, max_nodes)


def _walk(text: str, what: str, error: type[RedlineError], max_nodes: int) -> YAMLError | None:
    """check_yaml's walk; the YAML error that stopped it, or None: the whole text was walked."""
    if len(text) > MAX_YAML_BYTES:
        raise error(
            f"{what} is {len(text) >> 20} MiB, over the {MAX_YAML_BYTES >> 20} MiB redline reads: is it the right file?"
        )
    depth, key, nodes, parser = 0, "", 0, _parser(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            nodes += isinstance(event, _NODES)
            if nodes > max_nodes:
                raise error(
                    f"{what} holds over {max_nodes:,} YAML nodes (values, lists and mappings), more than "
                    "redline reads in one file: is it the right file?"
                )
            if isinstance(event, ev.ScalarEvent):
                if len(event.value) > MAX_DIGITS:  # only a long value can be a number Python cannot build
                    _check_scalar(event, key, what, error)
                key = event.value
            if isinstance(event, ev.AliasEvent):
                raise error(
                    f"{what} uses a YAML alias (*{event.anchor}): redline reads YAML alias-free (an alias can "
                    "expand without end, and a value an anchor shares cannot be edited in one place without changing "
                    "every use of it); write the value out where it is used"
                )
            if isinstance(event, _STARTS):
                depth += 1
                if depth > MAX_DEPTH:
                    raise error(
                        f"{what} nests deeper than {MAX_DEPTH} levels, deeper than redline reads: is it the right file?"
                    )
            elif isinstance(event, _ENDS):
                depth -= 1
    except YAMLError as exc:
        return exc
    return None


def _check_scalar(event: ev.ScalarEvent, key: str, what: str, error: type[RedlineError]) -> None:
    """Refuse an integer too long for Python to build (the parser would crash): named by the key before it."""
    value = str(event.value)
    if not event.style and len(value) > MAX_DIGITS and _INTEGER.match(value):
        raise error(
            f"{what}: {key[:80] or 'a value'} is a number of {len(value):,} digits, over the {MAX_DIGITS:,} a number "
            "redline reads may have: is it the right file?"
        )


def load_json(text: str, what: str, error: type[RedlineError] = InputError, *, hint: str = "") -> Any:
    """The JSON value of a text, size-capped; a nest too deep for the parser is an error, not a crash."""
    if len(text) > MAX_JSON_BYTES:
        raise error(f"{what} is {len(text) >> 20} MiB, over the {MAX_JSON_BYTES >> 20} MiB redline reads")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{what} is not JSON ({exc.msg} at line {exc.lineno}){hint}") from exc
    except ValueError as exc:  # an integer past Python's digit limit (sys.get_int_max_str_digits): its key named
        found = _LONG_JSON_NUMBER.search(text)
        key = f"{found.group(1)} is" if found else "it has"
        raise error(f"{what}: {key} a number of over {MAX_DIGITS:,} digits{hint or ': is it the right file?'}") from exc
    except RecursionError as exc:  # the C parser checks its depth against Python's recursion limit
        raise error(f"{what} nests deeper than redline reads: is it the right file?") from exc


def read_regular(
    path: Path,
    max_bytes: int,
    what: str,
    error: type[RedlineError] = InputError,
    *,
    nofollow: bool = False,
) -> str:
    """A regular file's text (UTF-8, undecodable bytes replaced, a lone \\r kept), at most max_bytes long.

    A FIFO or a device is refused without blocking on it; the checks and the read use one open file,
    so the file cannot be swapped in between. nofollow (a file redline derives itself): a symlink is
    refused too. OSError (missing, unreadable) is the caller's to word.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
    if nofollow:
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise error(
                    f"{what} is a symlink: redline writes this file itself and never follows a link "
                    "there (it could lead out of the workspace); remove the link"
                ) from exc
            raise
    else:
        fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} is not a regular file (a FIFO, device or folder): redline reads only plain files")
        if info.st_size > max_bytes:
            raise error(f"{what} is {info.st_size >> 20} MiB, over the {max_bytes >> 20} MiB redline reads")
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise error(f"{what} grew past {max_bytes >> 20} MiB while it was read")
    return data.decode("utf-8", errors="replace")
