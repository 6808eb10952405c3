"""A model's shape where its folder cannot be read here: a config.json the person gives by file (`--model-config-file`
on the CLI, `model_config_file` over MCP, a path inside the workspace). The text is read by the edge that was given
the path (the untrusted reader) and parsed here as JSON with the size and depth checks every untrusted text has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from redline.errors import InputError
from redline.models.shape import ConfigValueError, ModelShape, shape_of
from redline.ops.evidence.context import local_model_files, read_config_file
from redline.untrusted import load_json

MODEL_CONFIG_FIELD = "model_config_file"  # errors name the file as the request does


def read_given_config(path: Path, named: str) -> str:
    """The text of the config.json a person gives by file (`named`: as the request names it; messages say it is the
    model_config_file), read as a model folder's is: config.json's own 1 MiB cap, plain files only
    (ops/evidence/context.py read_config_file)."""
    what = f"{MODEL_CONFIG_FIELD} {named}"
    try:
        return read_config_file(path, what)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise InputError(f"{what}: no such file; give the model's config.json") from exc


def given_file(path: str | Path | None) -> str | None:
    """The config.json a person names at a terminal (`--model-config-file PATH`, any path of theirs), read as
    read_given_config reads it; None where none is named."""
    return read_given_config(Path(path), str(path)) if path else None


def given_config(text: str) -> tuple[ModelShape, dict[str, Any]]:
    """The shape and the fields of a config.json given as text; one InputError naming the file otherwise."""
    data = load_json(text, MODEL_CONFIG_FIELD, hint=": give the model's config.json")
    if not isinstance(data, dict):
        raise InputError(f"{MODEL_CONFIG_FIELD}: a config.json is one JSON object; give the model's config.json")
    try:
        shape, why = shape_of(data)
    except ConfigValueError as exc:  # a value of the wrong kind or size: one line naming the field
        raise InputError(f"{MODEL_CONFIG_FIELD}: {exc}") from exc
    if shape is None:
        raise InputError(f"{MODEL_CONFIG_FIELD}: {why}")
    return shape, data


def request_shape(model: str, config_text: str | None) -> ModelShape:
    """The shape a prediction is asked for: the given config.json's, else the model folder's on this machine."""
    if config_text is not None:
        return given_config(config_text)[0]
    shape, why = local_model_files(str(Path(model).expanduser().absolute())).shape
    if shape is None:
        raise InputError(
            f"model: {why}; give the folder that holds the model's config.json, "
            f"or the file itself as {MODEL_CONFIG_FIELD}"
        )
    return shape


__all__ = ["MODEL_CONFIG_FIELD", "given_config", "given_file", "read_given_config", "request_shape"]
