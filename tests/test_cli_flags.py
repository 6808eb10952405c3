"""CLI flags generated from a request model: names, switches, choices, JSON, and values checked as argparse reads them."""

from __future__ import annotations

import argparse
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, model_validator

from redline.cli import main
from redline.cli.flags import add_request_flags, request_from_args
from redline.errors import InputError
from redline.ops.request_base import Request


class Knobs(BaseModel):
    port: Annotated[int, Field(ge=1, le=65535)] = 8000


class Example(Request):
    max_model_len: Annotated[int, Field(gt=0, description="Tokens per request")]
    utilization: Annotated[float, Field(gt=0, le=1, description="Of the GPU")] = 0.9
    policy: Literal["signal", "doubling"] = "signal"
    eager: Annotated[bool, Field(description="No graphs")] = False
    name: str | None = None
    knobs: Knobs | None = None

    @model_validator(mode="after")
    def _not_both(self) -> Example:
        if self.eager and self.policy == "doubling":
            raise ValueError("eager and doubling do not mix")
        return self


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors are raised, to be read, instead of exiting."""

    def error(self, message: str) -> Any:
        raise argparse.ArgumentError(None, message)


def parse(*argv: str, defaults: dict[str, Any] | None = None) -> argparse.Namespace:
    parser = Parser(prog="t", exit_on_error=False)
    add_request_flags(parser, Example, defaults=defaults)
    return parser.parse_args(argv)


def test_each_field_is_a_dashed_flag_and_the_request_comes_back_whole() -> None:
    args = parse(
        "--max-model-len",
        "32,768",
        "--utilization",
        "0.5",
        "--policy",
        "doubling",
        "--name",
        "x",
        "--knobs",
        '{"port": 8001}',
    )
    request = request_from_args(Example, args)
    assert request == Example(max_model_len=32768, utilization=0.5, policy="doubling", name="x", knobs=Knobs(port=8001))
    assert request.knobs is not None and request.knobs.model_fields_set == {"port"}  # only what was given


def test_defaults_switches_and_a_command_s_own_default() -> None:
    args = parse("--max-model-len", "1", "--eager")
    assert (args.utilization, args.policy, args.eager, args.name, args.knobs) == (0.9, "signal", True, None, None)
    assert parse(defaults={"max_model_len": 7}).max_model_len == 7  # no longer required once the command defaults it


def test_help_is_the_field_description_with_its_default() -> None:
    parser = argparse.ArgumentParser(prog="t")
    add_request_flags(parser, Example)
    text = parser.format_help()
    assert "Tokens per request" in text and "Of the GPU (default: 0.9)" in text and "--knobs JSON" in text
    assert "{signal,doubling}" in text


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--max-model-len", "0"], "greater than 0"),
        (["--max-model-len", "lots"], "valid integer"),
        (["--max-model-len", "1", "--utilization", "1.5"], "less than or equal to 1"),
        (
            ["--max-model-len", "1", "--policy", "halving"],
            "--policy: 'halving': Input should be 'signal' or 'doubling'",
        ),
        (["--max-model-len", "1", "--knobs", "{port: 1}"], "not JSON"),
        (["--max-model-len", "1", "--knobs", '{"port": 0}'], "greater than or equal to 1"),
        ([], "required: --max-model-len"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_flag(argv: list[str], said: str) -> None:
    with pytest.raises(argparse.ArgumentError) as caught:
        parse(*argv)
    assert said in str(caught.value)


def test_a_rule_across_fields_is_one_line_naming_the_request() -> None:
    with pytest.raises(InputError, match="eager and doubling do not mix"):
        request_from_args(Example, parse("--max-model-len", "1", "--eager", "--policy", "doubling"))


def test_ladder_init_takes_kv_block_size_and_refuses_a_bad_one(tmp_path, capsys) -> None:
    base = [
        "ladder",
        "init",
        "--ladder",
        str(tmp_path / "l.yml"),
        "--model",
        "m",
        "--model-path",
        "/models/m",
        "--floor-max-model-len",
        "4,096",
        "--floor-max-num-batched-tokens",
        "2048",
    ]
    with pytest.raises(SystemExit) as caught:
        main([*base, "--kv-block-size", "0"])
    assert caught.value.code == 2 and "--kv-block-size" in capsys.readouterr().err
    assert not (tmp_path / "l.yml").exists()
    assert main([*base, "--kv-block-size", "32", "--fixed", '{"load_format": "dummy"}']) == 0
    text = (tmp_path / "l.yml").read_text()
    assert "kv_block_size: 32" in text and "load_format: dummy" in text and "max_model_len: 4096" in text
