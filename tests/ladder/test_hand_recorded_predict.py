"""A ladder recorded by hand (the redline workflow's own way: the agent runs `vllm serve` over SSH and records each
log) plans its joint ceiling from its floor with the model's config.json given by file (issue 34, item 3): the
model's folder is on the GPU host, not here. The floor is the real H200 boot of the llama8b eager climb at
min_concurrency 16 (tests/data/vllm-0.26.0-h200-predict), whose degenerate ceiling is 56,464 / 2,048."""

from __future__ import annotations

import json
from pathlib import Path

from redline.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
FLOOR = DATA / "vllm-0.26.0-h200-predict" / "llama8b" / "ladder.runs" / "rung-001" / "boot.log"
CONFIG = DATA / "vllm-0.26.0-h200" / "models" / "llama8b" / "config.json"
INIT = [
    *("ladder", "init", "--model", "llama8b", "--model-path", "/models/llama8b"),  # a folder on the GPU host only
    *("--floor-max-model-len", "8192", "--floor-max-num-batched-tokens", "2048", "--min-concurrency", "16"),
    *("--gpu-name", "NVIDIA H200", "--gpu-memory-gib", "140.4", "--engine-version", "0.26.0"),
    *("--fixed", json.dumps({"enforce_eager": True, "load_format": "dummy"})),
]


def _next(ladder: Path, capsys) -> dict:  # noqa: ANN001
    capsys.readouterr()
    assert main(["ladder", "next", "--ladder", str(ladder), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_floor_plans_the_joint_ceiling_with_the_config_given_at_record(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    ladder = tmp_path / "ladders" / "l8b.yml"
    ladder.parent.mkdir()
    assert main([*INIT, "--ladder", str(ladder)]) == 0
    record = ["ladder", "record", "--ladder", str(ladder), "--log", str(FLOOR)]
    assert main([*record, "--model-config-file", str(CONFIG)]) == 0
    step = _next(ladder, capsys)
    rung = step["rung"]
    assert rung["max_num_batched_tokens"] >= 8192, step["reason"]
    assert abs(rung["max_model_len"] - 56_464) / 56_464 < 0.01, step["reason"]
    assert "the memory model predicts" in step["reason"]


def test_without_the_config_the_floor_climbs_by_the_signal_policy(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    ladder = tmp_path / "l8b.yml"
    assert main([*INIT, "--ladder", str(ladder)]) == 0
    assert main(["ladder", "record", "--ladder", str(ladder), "--log", str(FLOOR)]) == 0
    rung = _next(ladder, capsys)["rung"]
    assert (rung["max_model_len"], rung["max_num_batched_tokens"]) == (56_464, 2048)  # the degenerate ceiling


def test_the_config_given_at_init_sizes_the_model_too(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    ladder = tmp_path / "l8b.yml"
    assert main([*INIT, "--ladder", str(ladder), "--model-config-file", str(CONFIG)]) == 0
    assert main(["ladder", "record", "--ladder", str(ladder), "--log", str(FLOOR)]) == 0
    rung = _next(ladder, capsys)["rung"]
    assert rung["max_num_batched_tokens"] >= 8192 and abs(rung["max_model_len"] - 56_464) / 56_464 < 0.01


def test_a_config_that_is_not_json_is_one_line_naming_the_flag(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    assert main([*INIT, "--ladder", str(tmp_path / "l.yml"), "--model-config-file", str(bad)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model_config_file" in err[0] and "not JSON" in err[0]
