"""Issue 32, items 2 and 3: a model folder's config.json is untrusted input.

Item 2: memory_predict and ladder_init read config.json through the one untrusted reader (untrusted.read_regular):
a FIFO, a link to /dev/zero or a file over the cap is refused at once in one line, and no worker thread waits on it.
Item 3: a value of the wrong kind or size (zero or negative heads and layers, NaN, booleans where numbers go, huge
ints, deep nesting, wrong types) is one line naming the field and what it should be, never a bare ZeroDivisionError,
OverflowError, RecursionError, KeyError or a pydantic dump.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from redline.errors import InputError
from redline.models.serve import ServeConfig
from redline.models.shape import ConfigValueError, shape_of
from redline.ops.evidence.context import MAX_CONFIG_BYTES, files_from_text, local_model_files, model_identity_of
from redline.ops.ladder.plan import ladder_init
from redline.ops.predict.predict import memory_predict
from redline.ops.requests import LadderInitRequest
from redline.ops.requests_predict import MemoryPredictRequest

LLAMA8B = Path(__file__).resolve().parents[2] / "src" / "redline" / "data" / "boots" / "models" / "llama8b"
GOOD: dict[str, Any] = json.loads((LLAMA8B / "config.json").read_text())


def predict(folder: Path) -> None:
    memory_predict(
        None, MemoryPredictRequest(model=str(folder), max_model_len=4096, gpu_name="NVIDIA H200", gpu_memory_gib=139.8)
    )


def init(folder: Path) -> None:
    request = LadderInitRequest(
        model="m", model_path=str(folder), floor_max_model_len=4096, floor_max_num_batched_tokens=2048
    )
    ladder_init(folder.parent / "ladder.yml", request)


def refused_at_once(call: Callable[[], None]) -> str:
    """The one-line refusal of a call that must not block: it runs in a thread given 20 s (a read that waits on a
    FIFO fails the test, not the run; the FIFO is then opened for writing so the thread ends)."""
    said: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            said.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test reads what it was
            said.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "the read blocked"
    [exc] = said
    assert isinstance(exc, InputError), repr(exc)
    message = str(exc)
    assert "\n" not in message and "Traceback" not in message
    return message


def planted(tmp_path: Path, kind: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    config = folder / "config.json"
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "dev-zero":
        config.symlink_to("/dev/zero")
    elif kind == "folder":
        config.mkdir()
    else:  # over the cap, as valid JSON
        config.write_text(json.dumps(GOOD | {"padding": "x" * MAX_CONFIG_BYTES}))
    return folder


def unblock(folder: Path) -> None:
    """A FIFO a blocked reader waits on, opened for writing and closed: the reader sees its end."""
    config = folder / "config.json"
    if config.is_fifo():
        try:
            fd = os.open(config, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return  # no reader waits
        os.close(fd)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "over-the-cap"])
@pytest.mark.parametrize("call", [predict, init], ids=["memory_predict", "ladder_init"])
def test_model_folder_reads_refuse_a_fifo_a_device_and_a_file_over_the_cap_at_once(
    tmp_path: Path, kind: str, call: Callable[[Path], None]
) -> None:
    folder = planted(tmp_path, kind)
    try:
        message = refused_at_once(lambda: call(folder))
    finally:
        unblock(folder)
    assert "config.json" in message
    words = {
        "fifo": "not a regular file",
        "dev-zero": "not a regular file",
        "folder": "Is a directory",
        "over-the-cap": "over the 1 MiB",
    }[kind]
    assert words in message, message
    assert not (tmp_path / "ladder.yml").exists()


def test_model_folder_reads_follow_a_link_to_a_regular_file_as_a_hub_cache_has_them(tmp_path: Path) -> None:
    blob = tmp_path / "blobs" / "abc123"
    blob.parent.mkdir()
    blob.write_text(json.dumps(GOOD))
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "config.json").symlink_to(blob)
    files = local_model_files(str(folder))
    assert files.config == GOOD and files.shape[0] is not None


# (the config.json's change, the field its refusal names, the words it says)
HOSTILE: list[tuple[str, dict[str, Any], str, str]] = [
    ("zero heads", {"num_attention_heads": 0}, "num_attention_heads is 0", "whole number from 1 to"),
    ("negative layers", {"num_hidden_layers": -4}, "num_hidden_layers is -4", "whole number from 1 to"),
    ("zero layers", {"num_hidden_layers": 0}, "num_hidden_layers is 0", "whole number from 1 to"),
    ("NaN hidden", {"hidden_size": float("nan")}, "hidden_size is nan", "whole number"),
    ("true vocab", {"vocab_size": True}, "vocab_size is true", "whole number"),
    ("huge int", {"intermediate_size": 10**400}, "intermediate_size is a number of 401 digits", "whole number"),
    ("float heads", {"num_attention_heads": 32.5}, "num_attention_heads is 32.5", "whole number"),
    ("string kv heads", {"num_key_value_heads": "8"}, "num_key_value_heads is '8'", "whole number"),
    ("zero kv heads", {"num_key_value_heads": 0}, "num_key_value_heads is 0", "whole number from 1 to"),
    ("hidden under heads", {"hidden_size": 16, "num_attention_heads": 32}, "hidden_size 16", "write head_dim"),
    ("list text_config", {"text_config": [1, 2]}, "text_config is a list", "an object"),
    ("dict architectures", {"architectures": {"a": 1}}, "architectures is an object", "a list of class names"),
    ("number architecture", {"architectures": [7]}, "architectures holds 7", "a list of class names"),
    ("NaN rope", {"partial_rotary_factor": float("nan")}, "partial_rotary_factor is nan", "over 0, at most 1"),
    ("infinite rope", {"partial_rotary_factor": float("inf")}, "partial_rotary_factor is inf", "over 0, at most 1"),
    ("list dtype", {"torch_dtype": ["bfloat16"]}, "torch_dtype is a list", "a dtype's name"),
    ("string tie", {"tie_word_embeddings": "false"}, "tie_word_embeddings is 'false'", "true or false"),
    ("object model_type", {"model_type": {"x": 1}}, "model_type is an object", "a model type's name"),
    ("huge positions", {"max_position_embeddings": 1 << 80}, "max_position_embeddings is", "whole number"),
    ("MoE NaN experts", {"num_experts": float("nan")}, "num_experts is nan", "whole number from 0 to"),
    (
        "MoE top-k over experts",
        {"num_experts": 4, "num_experts_per_tok": 8, "moe_intermediate_size": 1024},
        "num_experts_per_tok is 8",
        "at most the 4 experts",
    ),
]


def _folder(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(text)
    return folder


@pytest.mark.parametrize(("change", "field", "words"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
@pytest.mark.parametrize("call", [predict, init], ids=["memory_predict", "ladder_init"])
def test_config_values_of_the_wrong_kind_or_size_are_one_line_naming_the_field(
    tmp_path: Path, change: dict[str, Any], field: str, words: str, call: Callable[[Path], None]
) -> None:
    folder = _folder(tmp_path, json.dumps(GOOD | change))  # NaN and Infinity as Python's json writes them
    with pytest.raises(InputError) as refused:
        call(folder)
    message = str(refused.value)
    assert f"config.json: {field}" in message and words in message and "\n" not in message, message
    with pytest.raises(ConfigValueError):
        shape_of(GOOD | change)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"num_hidden_layers": ' + "9" * 5000 + "}", "a number of over 4,300 digits"),
        ('{"text_config": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests deeper than redline reads"),
        ("[1, 2, 3]", "is not a JSON object"),
        ('{"hidden_size": 4096,', "is not JSON"),
    ],
    ids=["5000 digits", "deep nest", "a list", "cut short"],
)
@pytest.mark.parametrize("call", [predict, init], ids=["memory_predict", "ladder_init"])
def test_config_values_a_text_json_cannot_build_is_one_line(
    tmp_path: Path, text: str, words: str, call: Callable[[Path], None]
) -> None:
    with pytest.raises(InputError) as refused:
        call(_folder(tmp_path, text))
    assert words in str(refused.value) and "\n" not in str(refused.value), str(refused.value)


def test_config_values_the_context_records_are_kept_only_where_they_fit() -> None:
    files = files_from_text(json.dumps(GOOD | {"torch_dtype": "x" * 100, "quantization_config": {"quant_method": [1]}}))
    identity = model_identity_of(ServeConfig(model="/m", max_model_len=8), files)
    assert identity.dtype is None and identity.quantization is None and identity.config_hash
