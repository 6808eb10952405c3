"""GPU telemetry judged (policy/telemetry.py, pure): rows read whole or not at all, a summary per GPU, whose
processes count as another's, and what the bench check says."""

from __future__ import annotations

import pytest

from redline.models.sol import SolFigure
from redline.policy import telemetry
from redline.policy.sol import with_telemetry

ROW = "2026/12/02 22:28:23.342, {i}, GPU-53cff458-a1dc-4834-4670-5f85d87eafec, {busy}, {mem}, 130049, {w}, 1980"


def rows(*values: tuple[int, int, int, str]) -> str:
    return "\n".join(ROW.format(i=i, busy=b, mem=m, w=w) for i, b, m, w in values)


def test_a_row_cut_off_by_the_stop_or_not_a_sample_is_left_out() -> None:
    text = rows((0, 50, 20, "400.5")) + "\n2026/12/02 22:28:23.542, 0, GPU-53cff458\nNo devices were found\n"
    assert len(telemetry.rows(text)) == 1


def test_the_summary_is_per_gpu_with_means_peaks_and_unknown_power_left_unknown() -> None:
    text = rows((0, 40, 20, "400"), (1, 90, 60, "[N/A]"), (0, 60, 30, "500"), (1, 70, 40, "[N/A]"))
    found = telemetry.summarise(text, 200, "bench-c8.gpu.csv", [])
    assert found is not None and [g.index for g in found.gpus] == [0, 1] and found.seconds == 0.0
    first, second = found.gpus
    assert (first.samples, first.gpu_busy_pct, first.gpu_busy_peak_pct, first.memory_busy_pct) == (2, 50, 60, 25)
    assert first.power_w == 450 and second.power_w is None and second.memory_busy_peak_pct == 60
    assert telemetry.summarise("", 200, None, None) is None


def test_another_process_is_one_this_host_runs_outside_the_server_s_group() -> None:
    apps = "1678, python3, 630\n2001, VLLM::EngineCore, 120000\n999, [Not Found], 10\n"
    groups = telemetry.process_groups("  1678  1678\n 2001  2000\n 2000 2000\n")
    assert groups == {1678: 1678, 2001: 2000, 2000: 2000}
    assert telemetry.others_of(apps, groups, 2000) == ["pid 1678 (python3, 630 MiB)"]  # 999: not this host's
    assert telemetry.others_of(apps, groups, None) is None and telemetry.others_of(apps, None, 2000) is None
    assert telemetry.process_groups("") is None


def test_the_check_flags_a_shared_gpu_and_otherwise_says_what_it_saw_or_why_nothing() -> None:
    text = rows((0, 54, 23, "451"))
    shared = telemetry.check(telemetry.summarise(text, 200, None, ["pid 1678 (python3, 630 MiB)"]), "")
    assert not shared.ok and "pid 1678" in shared.said and "not ranked" in shared.said
    clean = telemetry.check(telemetry.summarise(text, 200, None, []), "")
    assert (
        clean.ok
        and clean.said == "GPU 0 ran kernels 54% of the time and read or wrote memory 23% (1 samples every 200 ms)"
    )
    unknown = telemetry.check(telemetry.summarise(text, 200, None, None), "")
    assert unknown.ok and unknown.said.endswith("; other processes on it not known")
    none = telemetry.check(None, "nvidia-smi is not on target local")
    assert none.ok and none.said == "no GPU telemetry: nvidia-smi is not on target local"


@pytest.mark.parametrize("sol", [None, SolFigure(key="h200", basis="b")])
def test_speed_of_light_stays_arithmetic_without_samples(sol: SolFigure | None) -> None:
    assert with_telemetry(sol, None) == sol
    backed = with_telemetry(sol, telemetry.summarise(rows((0, 54, 23, "451"), (0, 54, 25, "451")), 200, None, []))
    assert backed is None if sol is None else (backed.rigour, backed.memory_busy_pct) == ("telemetry-backed", 24)
