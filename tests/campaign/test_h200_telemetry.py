"""GPU telemetry recorded on the H200 by redline's own code (tests/data/vllm-0.26.0-h200-telemetry): every bench's
summary is what policy/telemetry.py makes of the samples file kept beside it (re-judged from disk, the two agree),
a process another program ran on the GPU flagged every bench of the cell booted beside it (nvidia-smi's own list
named it), the speed-of-light figure becomes telemetry-backed with the measured memory share beside the arithmetic
one, and the stand-in nvidia-smi the CPU tests use writes rows of the real tool's shape."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from redline.ledger.campaign_file import read_verdicts
from redline.models.shape import shape_of
from redline.ops.campaign.plan import load_campaign
from redline.ops.evidence.sol import sol_table
from redline.policy import telemetry
from redline.policy.sol import decode_ceiling, with_telemetry
from tests.server.helpers import LLAMA8B

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-telemetry"
CLEAN, SHARED = DATA / "telemetry-h200" / "campaign.yml", DATA / "telemetry-h200-shared" / "campaign.yml"
FAKE = Path(__file__).resolve().parent.parent / "server" / "bin" / "nvidia-smi"


def verdicts(path: Path):  # type: ignore[no-untyped-def]
    loaded = load_campaign(path)
    return loaded, read_verdicts(loaded.results, loaded.names)


def trials(path: Path):  # type: ignore[no-untyped-def]
    loaded, found = verdicts(path)
    return [(loaded.results / "cells" / v.cell, t) for v in found.values() for r in v.results for t in r.repeats]


@pytest.mark.parametrize("path", [CLEAN, SHARED], ids=["clean", "shared"])
def test_each_bench_s_summary_is_what_its_own_samples_file_says(path: Path) -> None:
    for cell, trial in trials(path):
        assert trial.telemetry is not None and trial.telemetry.file is not None
        samples = (cell / trial.telemetry.file).read_text()
        again = telemetry.summarise(samples, 200, trial.telemetry.file, trial.telemetry.others)
        assert again == trial.telemetry and again.gpus[0].samples >= 30  # 200 ms over a 6-9 s bench


def test_the_clean_cells_are_green_and_saw_no_other_process() -> None:
    _, found = verdicts(CLEAN)
    assert {v.verdict for v in found.values()} == {"green"}
    for _, trial in trials(CLEAN):
        assert trial.telemetry and trial.telemetry.others == []
        gpu = {c.check: c for c in trial.checks}["gpu"]
        assert gpu.ok and gpu.said == telemetry.check(trial.telemetry, "").said


def test_a_process_nvidia_smi_listed_beside_the_server_flagged_every_bench_of_its_cell() -> None:
    listed = (DATA / "apps.txt").read_text().split(",")[0]
    (cell,) = verdicts(SHARED)[1].values()
    assert cell.verdict == "red" and not any(r.ok for r in cell.results)
    for _, trial in trials(SHARED):
        assert trial.telemetry and trial.telemetry.others == [f"pid {listed} (python3, 630 MiB)"]
        gpu = {c.check: c for c in trial.checks}["gpu"]
        assert not gpu.ok and "not ranked" in gpu.said


def test_speed_of_light_is_telemetry_backed_with_the_measured_memory_share_beside_the_arithmetic_one() -> None:
    shape, _ = shape_of(json.loads((LLAMA8B / "config.json").read_text()))
    for cell, trial in trials(CLEAN):
        figures = trial.figures
        assert figures is not None and figures.max_concurrency is not None
        kv = None if "kvauto" in cell.name else "fp8"
        arithmetic = decode_ceiling(
            sol_table(), "NVIDIA H200", shape, gpus=1, dp=1, batch=figures.max_concurrency, input_len=512,
            output_len=64, kv_cache_dtype=kv, measured_tokens_per_s=figures.output_throughput,
        )  # fmt: skip
        backed = with_telemetry(arithmetic, trial.telemetry)
        assert arithmetic.rigour == "arithmetic" and arithmetic.memory_busy_pct is None
        assert backed is not None and backed.rigour == "telemetry-backed" and backed.pct_of_ceiling is not None
        assert backed.memory_busy_pct == pytest.approx(trial.telemetry.gpus[0].memory_busy_pct)  # type: ignore[union-attr]
        assert 2 < backed.pct_of_ceiling < 25 and 10 < backed.memory_busy_pct < 40  # eager, 64 output tokens


def test_the_stand_in_nvidia_smi_writes_rows_of_the_real_tool_s_shape() -> None:
    real = (DATA / "telemetry-h200" / "l8b-telemetry" / "cells" / "kvauto" / "bench-c16.gpu.csv").read_text()
    query = ",".join(telemetry.QUERY)
    fake = subprocess.run(
        [str(FAKE), f"--query-gpu={query}", "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True
    ).stdout

    def shape(line: str) -> list[str]:
        return [re.sub(r"[0-9]", "9", re.sub(r"[a-f]", "x", cell.strip())) for cell in line.split(",")][:2]

    assert shape(fake.splitlines()[0]) == shape(real.splitlines()[0])  # the timestamp and index, digit for digit
    assert len(telemetry.rows(fake)) == 1 and len(telemetry.rows(real)) == len(real.splitlines())
