"""Bad input as redline says it everywhere: one line per mistake, naming the field and what to write.

    explain(exc, AbRunRequest)
    # spec.trials: Input should be greater than or equal to 1, not 0; write a number >= 1
    unknown_argument("i_understand", ["i_understand_this_submits_jobs", "dry_run"])
    # unknown argument 'i_understand': did you mean 'i_understand_this_submits_jobs'?

The MCP layer (server/toolkit.py) and the CLI (cli/flags.py) both say a pydantic ValidationError through
`explain`, so a field is named and advised the same way at a terminal and to an agent, never with pydantic's
own text and its documentation URL. A location is walked through the model it was validated against, so
pydantic's union tags (`int`, `function-after[...]`, a model's class name) are left out of the path, and an
unknown field gets the closest field of its own object.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

_SHOWN = 60  # the most characters of a bad value a line repeats


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice nearest to word: one that begins with it (or it with one), else difflib's; None when none is near."""
    options = sorted(set(choices))
    overlapping = [c for c in options if len(word) >= 3 and (c.startswith(word) or word.startswith(c))]
    near = overlapping or difflib.get_close_matches(word, options, n=3, cutoff=0.6)
    return max(near, key=lambda c: difflib.SequenceMatcher(None, word, c).ratio(), default=None)


def unknown_argument(name: str, known: Iterable[str], what: str = "argument") -> str:
    """One line refusing an unknown name: the closest known one, else every known one."""
    known = sorted(known)
    match = closest(name, known)
    if match is not None:
        return f"unknown {what} {_shown(name)}: did you mean {match!r}?"
    if not known:
        return f"unknown {what} {_shown(name)}: there are none to give; leave it out"
    return f"unknown {what} {_shown(name)}: write one of {', '.join(known)}, or leave it out"


def explain(
    exc: ValidationError, root: Any = None, head: Callable[[str], str] = str, whole: str = "the request"
) -> str:
    """Every error of exc, a line each: `<field path>: <what is wrong>; write <what>`.

    What is wrong is pydantic's own sentence (never its URL), with the value given; what to write comes from the
    kind of error and its limits. root: the model (or type) exc came from: its fields name the path and suggest
    a field for an unknown one; head: how the first part of a path is written (the CLI writes a field as its
    --flag); whole: what a line names when the error is the whole value's (the CLI names the value itself).
    """
    lines = [_line(error, root, head, whole) for error in exc.errors(include_url=False)]
    return "\n".join(dict.fromkeys(lines))  # a union reports one mistake once per member


def explain_line(exc: ValidationError, root: Any = None) -> str:
    """explain's lines in one, `; ` between them: for a message that names its file or source first."""
    return "; ".join(explain(exc, root, whole="value").splitlines())


def _line(error: ErrorDetails, root: Any, head: Callable[[str], str], whole: str) -> str:
    parts, siblings = _walk(root, tuple(error["loc"]))
    path = _path(parts, head) if parts else whole
    if error["type"] == "extra_forbidden":
        match = closest(str(parts[-1]), siblings) if parts else None
        advice = f"write {match!r} instead, or leave it out" if match else "leave it out"
        if siblings and not match:
            advice = f"write one of {', '.join(siblings)}, or leave it out"
        return f"{path}: unknown field; {advice}"
    return f"{path}: {_advice(error, given=bool(parts))}"


def _path(parts: Sequence[str | int], head: Callable[[str], str]) -> str:
    text = head(str(parts[0])) if isinstance(parts[0], str) else f"[{parts[0]}]"
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


_WRITE = {  # what to write, by the kind of error (its limits from the error's context)
    "missing": "a value for it",
    "greater_than": "a number > {gt}",
    "greater_than_equal": "a number >= {ge}",
    "less_than": "a number < {lt}",
    "less_than_equal": "a number <= {le}",
    "string_too_short": "at least {min_length} characters",
    "string_too_long": "at most {max_length} characters",
    "too_short": "at least {min_length} items",
    "too_long": "at most {max_length} items",
    "string_pattern_mismatch": "text matching that pattern",
    "literal_error": "one of those",
    "enum": "one of those",
    "multiple_of": "a multiple of {multiple_of}",
}
_KINDS = {  # what to write, by the type a value is not (the kind's prefix)
    "int": "a whole number",
    "float": "a number",
    "decimal": "a number",
    "bool": "true or false",
    "string": "a string",
    "dict": 'an object, such as {"name": "value"}',
    "model": 'an object, such as {"name": "value"}',
    "dataclass": 'an object, such as {"name": "value"}',
    "list": 'a list, such as ["a", "b"]',
    "tuple": 'a list, such as ["a", "b"]',
    "set": 'a list, such as ["a", "b"]',
    "json": "valid JSON",
    "none": "null",
}


def _advice(error: ErrorDetails, given: bool) -> str:
    """What is wrong and what to write; given: the line names a field, so the value is repeated after the msg."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind in ("value_error", "assertion_error"):  # redline's own checks: their text says what to do
        return str(ctx.get("error") or error["msg"])
    wrong = error["msg"]
    if given and kind != "missing" and isinstance(value, str | int | float | bool):
        wrong += f", not {_shown(value)}"
    if kind in _WRITE:
        try:
            return f"{wrong}; write {_WRITE[kind].format(**ctx)}"
        except (KeyError, IndexError):  # a context without the limit: pydantic's sentence says it
            return wrong
    what = next((w for prefix, w in _KINDS.items() if kind.startswith(prefix)), None)
    return f"{wrong}; write {what}" if what else wrong


# ---- a location, walked through the model ----------------------------------------------------------------


def _walk(root: Any, loc: tuple[str | int, ...]) -> tuple[list[str | int], list[str]]:
    """loc without pydantic's union tags, and the field names of the object holding its last part.

    Without a root every part is kept and no field is known.
    """
    if root is None:
        return list(loc), []
    kept: list[str | int] = []
    here: list[Any] = [root]
    siblings: list[str] = []
    for part in loc:
        models = [m for t in here for m in _models(t)]
        siblings = sorted({name for m in models for name in m.model_fields})
        step = _step(here, part)
        if step is None:  # a union member's tag: the same value, seen as one of its types
            continue
        kept.append(part)
        here = step
    return kept, siblings


def _step(here: list[Any], part: str | int) -> list[Any] | None:
    """What the annotations in `here` hold at part; None when part is a union tag, not a key or index."""
    found: list[Any] = []
    for annotation in here:
        for arm in _arms(annotation):
            origin = get_origin(arm)
            if isinstance(arm, type) and issubclass(arm, BaseModel):
                if isinstance(part, str) and part in arm.model_fields:
                    found.append(arm.model_fields[part].annotation)
            elif isinstance(part, int) and origin in (list, tuple, set, frozenset, Sequence):
                found.extend(get_args(arm)[:1])
            elif origin is dict and isinstance(part, str):
                found.extend(get_args(arm)[1:2])
    if found:
        return found
    return None if isinstance(part, str) and _is_tag(part, here) else []


def _is_tag(part: str, here: list[Any]) -> bool:
    """A loc part pydantic added for a union member (or a validator) rather than a key the caller wrote."""
    if any(isinstance(m, type) and m.__name__ == part for t in here for m in _arms(t)):
        return True
    return "[" in part or part in ("str", "int", "float", "bool", "none", "list", "dict", "tuple", "set")


def _arms(annotation: Any) -> list[Any]:
    """annotation through Annotated and unions: the types a value of it may be."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return [arm for inner in get_args(annotation) for arm in _arms(inner)]
    return [annotation]


def _models(annotation: Any) -> list[type[BaseModel]]:
    return [a for a in _arms(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]


__all__ = ["closest", "explain", "explain_line", "unknown_argument"]
