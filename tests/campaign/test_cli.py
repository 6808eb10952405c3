"""`redline campaign init|plan|run|status|aggregate|champion|report` through the real console entry, on the fake
engine: the same operations the MCP tools call, for a person at a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from redline.cli import main
from tests.campaign.helpers import Fake, make_fake
from tests.conftest import processes_naming


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


def redline(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "redline", "campaign", *args], capture_output=True, text=True, timeout=120
    )


def test_init_writes_a_campaign_that_plans(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    path = fake.campaigns / "c1.yml"
    assert main(["campaign", "init", "--campaign", str(path), "--spec", json.dumps(fake.spec())]) == 0
    assert "2 cells x 2 concurrencies (2 boots)" in capsys.readouterr().out
    assert main(["campaign", "plan", "--campaign", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 boots, 4 benches to run" in out and "cell 1 mnbt2048 (baseline)" in out
    assert "bench   c=4 repeat 1 (16 prompts)" in out and "max_num_seqs was unset" in out


def test_a_bad_spec_is_a_usage_error_naming_the_flag(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "campaign",
                "init",
                "--campaign",
                str(fake.campaigns / "c1.yml"),
                "--spec",
                json.dumps(fake.spec(concurrencies=[0])),
            ]
        )
    assert exc.value.code == 2 and "--spec" in capsys.readouterr().err


def test_run_without_the_ack_starts_nothing(fake: Fake) -> None:
    done = redline("run", "--campaign", str(fake.write()), "--targets", str(fake.targets_file()))
    assert done.returncode == 2 and "pass --i-understand-this-submits-jobs" in done.stderr
    assert not (fake.root / "target").exists() and not (fake.campaigns / "c1").exists()


def test_a_dry_run_prints_every_command(fake: Fake) -> None:
    done = redline("run", "--campaign", str(fake.write()), "--targets", str(fake.targets_file()), "--dry-run")
    assert done.returncode == 0 and "none started" in done.stdout and "serve" in done.stdout, done.stderr
    assert not (fake.root / "target").exists()


def test_a_run_then_every_view_and_the_report(fake: Fake) -> None:
    path, targets = fake.write(), fake.targets_file()
    run = redline("run", "--campaign", str(path), "--targets", str(targets), "--i-understand-this-submits-jobs")
    assert run.returncode == 0, run.stderr
    assert (
        "mnbt2048: green" in run.stdout
        and "ran 2 cells, all green; " in run.stdout
        and "no GPU on this host; 2 replicate boot(s) of the top cells; noise band" in run.stdout  # no GPU words
        and "mnbt8192 (boot 2): green" in run.stdout
        and run.stdout.count("; 4 boots\n") == 1
    )
    assert "cell 2 of 4 (mnbt8192)" in run.stderr  # progress on stderr, results on stdout
    status = redline("status", "--campaign", str(path), "--json")
    assert json.loads(status.stdout)["green"] == 2
    table = redline("aggregate", "--campaign", str(path))
    assert table.returncode == 0 and table.stdout.count("green") == 4
    champion = redline("champion", "--campaign", str(path), "--top", "1", "--json")
    assert json.loads(champion.stdout)["rigor"] == "DRAFT"
    report = redline("report", "--campaign", str(path))
    assert report.returncode == 0 and "pareto.png" in report.stdout
    for name in ("report.md", "throughput.png", "tpot.png", "pareto.png"):
        assert (fake.campaigns / "c1" / name).exists()
    assert processes_naming(fake.root) == []


def test_a_target_the_campaign_names_needs_a_targets_file(fake: Fake) -> None:
    done = redline("run", "--campaign", str(fake.write(target="gpu-1")), "--i-understand-this-submits-jobs")
    assert done.returncode == 2 and "target 'gpu-1' needs --targets FILE" in done.stderr


def test_plan_takes_the_server_configs_widening_with_config(fake: Fake) -> None:
    flag = "--enable-sleep-mode"  # a real vLLM option that is not a serving lever: only a widening admits it
    path = fake.write(grid={"extra_flags": [[], [flag]]})
    config = fake.root / "redline-server.yml"
    config.write_text(
        json.dumps({"workspace": "ws", "targets": str(fake.targets_file()), "widen": {"vllm": {"flags": [flag]}}})
    )
    narrow = redline("plan", "--campaign", str(path))
    assert narrow.returncode == 2 and flag in narrow.stderr and "widen" in narrow.stderr
    wide = redline("plan", "--campaign", str(path), "--config", str(config), "--json")
    assert wide.returncode == 0, wide.stderr
    assert [c["widened"] for c in json.loads(wide.stdout)["cells"]] == [[], [f"flag {flag} (enable_sleep_mode)"]]
