"""Reading what people hand redline: text files and YAML configs, with errors that say what to fix."""

from importlib import resources
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from redline.errors import InputError, RedlineError
from redline.untrusted import CONFIG_YAML_NODES, MAX_JSON_BYTES, MAX_YAML_BYTES, parse_yaml, read_regular
from redline.validation_text import explain_line

_M = TypeVar("_M", bound=BaseModel)


def read_text(path: Path, label: str | None = None, *, max_bytes: int = MAX_JSON_BYTES) -> str:
    """A text file as written (a lone \\r of a progress bar stays, so line numbers match), or an InputError.

    Only regular files are read (a FIFO or device is refused at once), at most max_bytes of them.
    """
    label = label or str(path)
    try:
        return read_regular(path, max_bytes, label)
    except FileNotFoundError as exc:
        raise InputError(f"{label}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{label}: is a folder, not a file") from exc
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror})") from exc


def load_yaml(path: Path, model: type[_M], what: str, error: type[RedlineError] = InputError, *, hint: str = "") -> _M:
    """A YAML config file checked against its model; `what` names it in errors, `hint` says how to name another."""
    try:
        text = read_regular(path, MAX_YAML_BYTES, f"{what} {path}", error)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}{hint}") from exc
    data = parse_yaml(text, f"{what} {path}", error, max_nodes=CONFIG_YAML_NODES)
    if not isinstance(data, dict):
        raise error(f"{what} {path} must be a mapping (key: value lines), not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(f"{what} {path} is invalid: {explain_line(exc, model)}") from exc


def packaged_yaml(name: str, model: type[_M]) -> _M:
    """A YAML file redline ships (src/redline/data/NAME), checked against its model."""
    text = resources.files("redline").joinpath("data", name).read_text(encoding="utf-8")
    try:
        return model.model_validate(parse_yaml(text, name))
    except ValidationError as exc:
        raise InputError(f"{name} is invalid: {explain_line(exc, model)}") from exc
