"""`redline ladder ...` at a terminal: the same operations, a table, one-line errors."""

import json

from redline.cli import main
from tests.conftest import H200
from tests.ladder.helpers import QWEN, bench_json, q32_boot

INIT = [
    "ladder",
    "init",
    "--model",
    "qwen32b",
    "--model-path",
    QWEN,
    "--floor-max-model-len",
    "32768",
    "--floor-max-num-batched-tokens",
    "8192",
    "--max-position-embeddings",
    "1048576",
]


def _init(tmp_path, *extra):
    path = tmp_path / "ladder.yml"
    assert main([*INIT, "--ladder", str(path), *extra]) == 0
    return path


def _log(tmp_path, name, text):
    file = tmp_path / name
    file.write_text(text)
    return str(file)


def test_next_json_is_one_object_with_route_rung_and_reason(tmp_path, capsys):
    path = _init(tmp_path)
    assert main(["ladder", "record", "--ladder", str(path), "--log", _log(tmp_path, "b.log", q32_boot(32768))]) == 0
    capsys.readouterr()
    assert main(["ladder", "next", "--ladder", str(path), "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["route"] == "run_rung" and step["reason"]
    assert (step["rung"]["max_model_len"], step["rung"]["max_num_batched_tokens"]) == (256_848, 8192)


def test_a_climb_at_the_terminal_ends_with_the_ceiling_in_the_status_table(tmp_path, capsys):
    path = _init(tmp_path, "--gpu-name", "NVIDIA H200")
    run = ["ladder", "record", "--ladder", str(path)]
    assert main([*run, "--log", _log(tmp_path, "1.log", q32_boot(32768))]) == 0
    assert main([*run, "--log", _log(tmp_path, "2.log", q32_boot(256_848))]) == 0
    assert main([*run, "--smoke", _log(tmp_path, "s.json", bench_json(QWEN, 256_848))]) == 0
    assert main([*run, "--ceiling"]) == 0
    capsys.readouterr()
    assert main(["ladder", "status", "--ladder", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "next     done" in out
    table = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [(row[0], row[2], row[4], row[7]) for row in table] == [
        ("1", "32,768", "boot_ok", "-"),
        ("2", "256,848", "boot_ok", "pass"),
    ]
    assert "ceiling  max_model_len 256,848, max_num_batched_tokens 8,192 (rungs 2)" in out
    assert "would add about 6.99 GiB" in out


def test_replay_asks_for_a_past_rungs_config(tmp_path, capsys):
    path = _init(tmp_path)
    main(["ladder", "record", "--ladder", str(path), "--log", _log(tmp_path, "b.log", q32_boot(32768))])
    capsys.readouterr()
    assert main(["ladder", "next", "--ladder", str(path), "--replay", "1", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["replay_of"] == 1 and step["rung"]["max_model_len"] == 32768


def test_bad_input_is_one_line_on_stderr_and_exit_2(tmp_path, capsys):
    path = _init(tmp_path)
    before = path.read_bytes()
    capsys.readouterr()
    code = main(["ladder", "record", "--ladder", str(path), "--log", str(H200 / "l8b_32k.log")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("redline: error: the log served '/models/llama8b'") and err.count("\n") == 1
    assert path.read_bytes() == before
    assert main(["ladder", "status", "--ladder", str(tmp_path / "missing.yml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["ladder", "record", "--ladder", str(path), "--log", str(tmp_path / "missing.log")]) == 2
    assert "missing.log: no such file" in capsys.readouterr().err
