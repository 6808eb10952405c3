"""`redline ab run`, `redline baseline record|diff` and `redline known-good record|lookup|list` at a terminal: the same
operations as the MCP tools, flags from the same request models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from redline.cli import main
from tests.campaign.helpers import make_fake
from tests.conftest import H200
from tests.rigor.helpers import ab_spec, context


def test_ab_run_dry_run_and_the_ack_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = make_fake(tmp_path)
    spec = tmp_path / "ab.json"
    spec.write_text(ab_spec(fake).model_dump_json())
    args = ["ab", "run", "--spec-file", str(spec), "--workspace", str(tmp_path), "--targets", str(fake.targets_file())]
    assert main(args) == 2
    err = capsys.readouterr().err  # in the CLI's own words (cli/words.py), never the MCP tool's (issue 40)
    assert "`redline ab run` boots servers" in err and "pass --i-understand-this-submits-jobs to start it" in err
    assert "ab_run" not in err and "=true" not in err
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "A/B mnbt on local: 6 boots to run" in out and "  1. small-1: boot, warm up, bench x 2, stop" in out
    assert "  6. large-3:" in out and "next: call `redline ab run` with --i-understand-this-submits-jobs" in out
    assert not (tmp_path / "ab").exists()


def test_known_good_record_lookup_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = ["--workspace", str(tmp_path)]
    assert (
        main(
            [
                "known-good",
                "record",
                "--model",
                "/models/m",
                "--hardware",
                "NVIDIA H200",
                "--engine-version",
                "0.26.0",
                "--flags",
                '["--gdn-prefill-backend=triton"]',
                "--why",
                "crashes at c >= 64",
                "--evidence",
                '[{"kind": "note", "ref": "notes.md"}]',
                *ws,
            ]
        )
        == 0
    )
    assert "recorded in known-good.yml: /models/m on NVIDIA H200, vllm 0.26.0" in capsys.readouterr().out
    lookup = ["known-good", "lookup", "--model", "/models/m", "--hardware", "NVIDIA H200", *ws]
    assert main([*lookup, "--engine-version", "0.26.0"]) == 0
    assert "needs    --gdn-prefill-backend=triton" in capsys.readouterr().out
    assert main([*lookup, "--engine-version", "0.27.0"]) == 1
    assert main(["known-good", "list", "--json", *ws]) == 0
    assert len(json.loads(capsys.readouterr().out.splitlines()[-1])["entries"]) == 1


def test_baseline_record_and_diff_exit_1_on_red(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = json.loads((H200 / "bench_l8b_c16.json").read_text())
    (tmp_path / "a.json").write_text(json.dumps(bench))
    (tmp_path / "slow.json").write_text(json.dumps(bench | {"output_throughput": 1500.0}))
    shutil.copy(H200 / "bench_l8b_c16.json", tmp_path / "same.json")
    ctx = context(16).model_copy(update={"workload": context(16).workload.model_copy(update={"num_prompts": 64})})
    ws = ["--workspace", str(tmp_path), "--context", ctx.model_dump_json()]
    assert main(["baseline", "record", "--name", "prod", "--bench-file", "a.json", *ws]) == 0
    assert "recorded baseline prod in baselines.yml, from bench file a.json" in capsys.readouterr().out
    assert main(["baseline", "diff", "--baseline", "prod", "--bench-file", "same.json", *ws]) == 0
    assert capsys.readouterr().out.startswith("YELLOW at c=16: no improvement: output_throughput no change")
    assert main(["baseline", "diff", "--baseline", "prod", "--bench-file", "slow.json", *ws]) == 1
    out = capsys.readouterr().out
    assert out.startswith("RED") and "baseline prod: measured: /models/llama8b" in out
