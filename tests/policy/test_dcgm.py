"""DCGM's profiling samples (policy/dcgm.py, pure): dmon's text as its source prints it (the stand-in
tests/server/fake_dcgmi.py writes the same), each GPU's SM and DRAM active added to its nvidia-smi summary, and the
speed-of-light figure carrying the measured DRAM share beside the arithmetic one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from redline.models.ab import TrialPoint
from redline.models.sol import SolFigure
from redline.policy import dcgm, telemetry
from redline.policy.ab import point_sol
from redline.policy.sol import with_telemetry
from tests.policy.test_telemetry import rows
from tests.rigor.helpers import context

HEAD = "#Entity   SMACT        DRAMA        \nID                                  \n"
DMON = (
    HEAD
    + "GPU 0     0.600        0.300        \nGPU 1     N/A          N/A          \n"
    + "GPU 0     0.400        0.500        \nGPU 1     0.900        \n"  # a row cut off by the stop
    + HEAD
    + "GPU 1     0.800        0.700        \n\n\ndmon was stopped do to receiving a signal\n"
)
FAKE = Path(__file__).resolve().parents[1] / "server" / "fake_dcgmi.py"


def test_dmon_rows_are_read_per_gpu_and_n_a_or_a_cut_off_row_is_no_value() -> None:
    assert dcgm.samples(DMON) == {0: [(0.6, 0.3), (0.4, 0.5)], 1: [(0.8, 0.7)]}
    assert dcgm.samples("Error setting watches. Result: -29: Profiling is not supported\n") == {}


def test_the_stand_in_prints_what_the_reader_reads() -> None:
    argv = [sys.executable, str(FAKE), "dmon", "-e", "1002,1005", "-d", "10"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        proc.kill()
    assert lines[0].startswith("#Entity   SMACT        DRAMA") and lines[1].startswith("ID")
    assert dcgm.samples("".join(lines)) == {0: [(0.612, 0.358)] * 2}


def test_each_gpu_gets_its_dcgm_shares_and_the_file_they_came_from() -> None:
    smi = telemetry.summarise(rows((0, 54, 23, "451"), (1, 50, 20, "400")), 200, "bench-c8.gpu.csv", [])
    found = dcgm.with_dcgm(smi, DMON, dcgm.file_of("bench-c8.gpu.csv"))
    assert found is not None and found.dcgm_file == "bench-c8.dcgm.txt"
    (g0, g1) = found.gpus
    assert (g0.sm_active_pct, g0.dram_active_pct, g1.sm_active_pct, g1.dram_active_pct) == (50.0, 40.0, 80.0, 70.0)
    assert dcgm.with_dcgm(smi, "", "x") == smi and dcgm.with_dcgm(None, DMON, "x") is None


def test_speed_of_light_carries_the_measured_dram_share_only_where_every_gpu_and_trial_had_it() -> None:
    smi = telemetry.summarise(rows((0, 54, 23, "451"), (1, 50, 20, "400")), 200, "b.gpu.csv", [])
    sol = SolFigure(key="h200", basis="b", ceiling_tokens_per_s=1000.0)
    both = with_telemetry(sol, dcgm.with_dcgm(smi, DMON, "b.dcgm.txt"))
    assert both is not None and (both.rigour, both.memory_busy_pct, both.dram_active_pct) == (
        "telemetry-backed",
        21.5,
        55.0,
    )
    one = with_telemetry(sol, dcgm.with_dcgm(smi, DMON.replace("GPU 1 ", "GPU 7 "), "b.dcgm.txt"))
    assert one is not None and one.dram_active_pct is None  # GPU 1 unprofiled: no mean over part of the GPUs
    point = TrialPoint(concurrency=8, num_prompts=32, ok=True, healthy_after=True, context=context(8), sol=both)
    assert point_sol([point, point], 500.0).dram_active_pct == 55.0
    assert point_sol([point, point.model_copy(update={"sol": one})], 500.0).dram_active_pct is None
