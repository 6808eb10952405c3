"""Sub-keys of JSON-valued levers (issue 19, class 5), judged by an allowlist per lever: engine-neutral, no I/O.

A lever such as vLLM's `--speculative-config` takes a JSON object, whole (`--speculative-config={"method":
"ngram"}`) or one dotted sub-key at a time (`--speculative-config.method=ngram`, which the engine reads as
`{"method": "ngram"}`, its value parsed as JSON where it parses). Only the sub-keys its allowlist names pass,
at any depth; every other one is refused, with the reason its own top-level flag has where there is one (a
draft's `revision` or `download_dir` is refused as `--revision` and `--download-dir` are). A lever that is not
JSON-valued takes no sub-key and no JSON object.

    SubKeys: {"method": None, "draft": {"count": None}}    # None: a value (text, number, list); a mapping: an object
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from redline.errors import InputError

SubKeys: TypeAlias = Mapping[str, "SubKeys | None"]
# Why a sub-key is refused, given its name: the table of the engine's top-level flags, then the lever's own.
Reason = Callable[[str], str | None]


def leaves(*names: str) -> dict[str, SubKeys | None]:
    """An allowlist of sub-keys that each take a value (no object)."""
    return dict.fromkeys(names)


def _value(text: str) -> Any:
    """A dotted sub-key's value as the engine reads it: JSON where it parses, else the text."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _nested(path: list[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    return dict(out)


def _holds_object(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(_holds_object(v) for v in value)


def _refuse(flag: str, at: str, key: str, allowed: SubKeys, reason: Reason) -> InputError:
    why = reason(key)
    what = f"it {why}" if why else f"{key} is not a sub-key redline allows there (it allows {', '.join(allowed)})"
    return InputError(
        f"extra flag {flag!r} ({at}) is refused: {what}; only the allowlist's sub-keys pass, and no widening frees one"
    )


def _check_object(flag: str, obj: Mapping[str, Any], allowed: SubKeys, where: str, reason: Reason) -> None:
    for key, value in obj.items():
        at = f"{where}.{key}"
        if key not in allowed:
            raise _refuse(flag, at, key, allowed, reason)
        sub = allowed[key]
        if isinstance(value, dict) and sub is not None:
            _check_object(flag, value, sub, at, reason)
        elif _holds_object(value):
            raise InputError(f"extra flag {flag!r} ({at}) is refused: {at} takes a value, not a JSON object")


def check_json_lever(flag: str, dest: str, allowed: SubKeys | None, reason: Reason) -> None:
    """Refuse a sub-key the lever's allowlist lacks (in either spelling, at any depth), a JSON value that is no
    object, and any sub-key or JSON object given to a lever that is not JSON-valued (`allowed` None)."""
    name, has_value, text = flag.partition("=")
    path = name.split(".")[1:]
    if allowed is None:
        if path:
            raise InputError(
                f"extra flag {flag!r} ({dest}) is refused: {dest} takes no sub-keys; write it as "
                f"{name.split('.', 1)[0]}=VALUE"
            )
        if "{" in text:
            raise InputError(f"extra flag {flag!r} ({dest}) is refused: {dest} takes a value, not a JSON object")
        return
    if path and not has_value:  # the engine would take the next argument for its value
        raise InputError(f"extra flag {flag!r} ({dest}) is refused: a sub-key needs its value: write {name}=VALUE")
    if path:
        obj = _nested(path, _value(text))
    else:
        parsed = _value(text)
        if not isinstance(parsed, dict):
            raise InputError(
                f"extra flag {flag!r} ({dest}) is refused: {dest} takes a JSON object of "
                f'{", ".join(allowed)} (such as {name}={{"{next(iter(allowed))}": ...}})'
            )
        obj = parsed
    _check_object(flag, obj, allowed, dest, reason)


__all__ = ["Reason", "SubKeys", "check_json_lever", "leaves"]
