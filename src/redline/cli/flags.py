"""CLI flags generated from a request model, so a command takes what its MCP tool takes.

    add_request_flags(parser, LadderInitRequest)           # --model, --model-path, --floor-max-model-len, ...
    request = request_from_args(LadderInitRequest, args)   # the same request the MCP tool builds

Each field becomes `--its-name-with-dashes`: its help is the field's description, a bool is a
switch, a Literal (or an enum) gives the choices, a model or a dict is written as JSON, and a
field with no default is a required flag. A value is checked against the field's own type and
constraints as argparse reads it, so a bad one is a usage error naming the flag.
"""

import argparse
import json
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from redline.errors import InputError
from redline.ops.request_base import Request
from redline.validation_text import explain

_UNSET = object()
Q = TypeVar("Q", bound=Request)
_METAVARS = {int: "N", float: "X"}


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_request_flags(
    parser: argparse.ArgumentParser,
    request: type[Request],
    *,
    skip: tuple[str, ...] = (),
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """One flag per field of the request, but those in skip (which the command takes another way).

    defaults: a command's own default for a field (e.g. the CLI's target is `local` when not given).
    """
    for name, info in request.model_fields.items():
        if name not in skip:
            parser.add_argument(flag(name), **_argument(info, (defaults or {}).get(name, _UNSET)))


def request_from_args(request: type[Q], args: argparse.Namespace, **given: Any) -> Q:
    """The request the parsed flags (and `given`, for fields the command takes another way) make."""
    values = {name: getattr(args, name) for name in request.model_fields if hasattr(args, name)}
    try:
        return request(**values, **given)
    except ValidationError as exc:
        raise InputError(explain(exc, request, head=flag)) from exc


def _argument(info: FieldInfo, default: Any) -> dict[str, Any]:
    """argparse's add_argument options for one field."""
    described = info.description or ""
    if info.annotation is bool:
        return {"action": "store_true", "help": described}
    if default is _UNSET:
        default = None if info.is_required() else info.default
    required = info.is_required() and default is None
    options: dict[str, Any] = {"type": _reader(info), "required": required, "help": _help(described, default)}
    if not required:
        options["default"] = default
    if choices := _choices(info):
        options["choices"] = choices
    options["metavar"] = "JSON" if _is_json(info.annotation) else _METAVARS.get(_base(info.annotation))
    return options


def _help(described: str, default: Any) -> str:
    return " ".join(filter(None, [described, None if default in (None, "") else f"(default: {default})"]))


def _reader(info: FieldInfo) -> Any:
    """A function that reads one flag's text as the field's value, or says why it cannot."""
    # A type form built at run time: no static type says more than Any.
    typed: Any = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    adapter: TypeAdapter[Any] = TypeAdapter(typed)
    json_value, whole = _is_json(info.annotation), _base(info.annotation) is int

    def read(text: str) -> Any:
        try:
            value: Any = json.loads(text) if json_value else text
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not JSON ({exc.msg}): write it like '{{\"port\": 8001}}'") from None
        if whole:
            value = text.replace(",", "").replace("_", "")  # 32,768 as people write it
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:  # a line per mistake: the value's, or its fields' (JSON)
            raise argparse.ArgumentTypeError(explain(exc, info.annotation, whole=repr(text[:80]))) from None

    return read


def _base(annotation: Any) -> Any:
    """The type inside `X | None` and Annotated[X, ...]."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return _base(inner[0]) if len(inner) == 1 else annotation
    return annotation


def _is_json(annotation: Any) -> bool:
    base = _base(annotation)
    return (
        get_origin(base) in (dict, list)
        or base in (dict, list)
        or isinstance(base, type)
        and issubclass(base, BaseModel)
    )


def _choices(info: FieldInfo) -> list[Any] | None:
    """The values a field takes, when they are few: a Literal's, an enum's, or those of each arm of a union of them
    (such as `Literal["auto"] | EngineName`); None when any arm takes more."""
    base = _base(info.annotation)
    arms = get_args(base) if get_origin(base) in (Union, types.UnionType) else (base,)
    found: list[Any] = []
    for arm in arms:
        taken = _arm_choices(arm, info if len(arms) == 1 else None)
        if taken is None:
            return None
        found += taken
    return found


def _arm_choices(arm: Any, info: FieldInfo | None) -> list[Any] | None:
    extras = [info.json_schema_extra] if info is not None else []
    while get_origin(arm) is Annotated:
        arm, *metadata = get_args(arm)
        extras += [m.json_schema_extra for m in metadata if isinstance(m, FieldInfo)]
    if get_origin(arm) is Literal:
        return list(get_args(arm))
    for extra in extras:
        enum = extra.get("enum") if isinstance(extra, dict) else None
        if isinstance(enum, list):
            return list(enum)
    return None
