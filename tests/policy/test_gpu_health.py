"""GPU health beside a bench (policy/gpu_health.py, issue 41 item 4): which clock event reasons flag a bench and which
are only said, ECC errors counted during it, XIDs the kernel logged, and rows no nvidia-smi writes refused naming the
line. The rows are in the real tool's csv,noheader,nounits shape (timestamp, index, reasons bitmask, temperature,
power, SM clock, its maximum, uncorrected ECC errors)."""

from __future__ import annotations

import pytest

from redline.errors import InputError
from redline.policy import gpu_health

T = "2026/12/06 10:00:0{s}.000"


def rows(*reasons: str, temp: str = "61", ecc: tuple[str, ...] | None = None, gpu: int = 0) -> str:
    counts = ecc or ("0",) * len(reasons)
    return "\n".join(
        f"{T.format(s=i)}, {gpu}, {r}, {temp}, 400.50, 1980, 1980, {e}"
        for i, (r, e) in enumerate(zip(reasons, counts, strict=True))
    )


WELL = "0x0000000000000000"


@pytest.mark.parametrize(
    ("bits", "flagged", "said"),
    [
        ("0x0000000000000040", True, "hardware thermal slowdown in 1 of 3 samples"),
        ("0x0000000000000020", True, "software thermal slowdown in 1 of 3 samples"),
        ("0x0000000000000080", True, "hardware power brake slowdown in 1 of 3 samples"),
        ("0x0000000000000008", True, "hardware slowdown in 1 of 3 samples"),
        ("0x0000000000000004", False, "clock events: software power cap in 1"),
        ("0x0000000000000001", False, "no clock slowdown"),
        ("0x0000000000000110", False, "clock events: sync boost in 1, display clock setting in 1"),
    ],
)
def test_a_slowdown_flags_the_bench_and_a_power_cap_or_idle_is_only_said(bits: str, flagged: bool, said: str) -> None:
    health = gpu_health.summarise(rows(WELL, bits, WELL), "bench-c2.health.csv", [], "")
    check = gpu_health.check(health, "")
    assert check.check == "gpu_health" and check.ok is not flagged and said in check.said
    assert ("not ranked" in check.said) is flagged


def test_an_ecc_error_counted_during_the_bench_flags_it_and_one_counted_before_does_not() -> None:
    before = gpu_health.summarise(rows(WELL, WELL, ecc=("3", "3")), None, [], "")
    during = gpu_health.summarise(rows(WELL, WELL, WELL, ecc=("3", "3", "5")), None, [], "")
    assert gpu_health.check(before, "").ok and "no new ECC error" in gpu_health.check(before, "").said
    check = gpu_health.check(during, "")
    assert not check.ok and "GPU 0 counted 2 new uncorrected ECC error(s)" in check.said


def test_an_xid_the_kernel_logged_during_the_bench_flags_it_and_a_closed_log_is_only_said() -> None:
    log = "[ 12.3] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n[ 12.4] other line"
    xid = gpu_health.xid_lines(log)
    assert xid == ["[ 12.3] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus."]
    check = gpu_health.check(gpu_health.summarise(rows(WELL, WELL), None, xid, ""), "")
    assert not check.ok and "the kernel logged 1 XID error(s)" in check.said and "79, pid=1234" in check.said
    closed = gpu_health.check(gpu_health.summarise(rows(WELL, WELL), None, None, "dmesg is not readable"), "")
    assert closed.ok and "XIDs not read (dmesg is not readable)" in closed.said


def test_no_rows_and_no_kernel_log_is_no_health_and_says_why() -> None:
    assert gpu_health.summarise("", None, None, "no dmesg") is None
    check = gpu_health.check(None, "nvidia-smi is not on target t")
    assert check.ok and check.said == "GPU health not read: nvidia-smi is not on target t"


def test_each_gpu_is_judged_alone_and_an_na_field_is_no_figure() -> None:
    text = rows(WELL, "0x0000000000000040") + "\n" + rows(WELL, WELL, gpu=1, temp="[N/A]")
    health = gpu_health.summarise(text, None, [], "")
    assert health is not None and [g.index for g in health.gpus] == [0, 1]
    assert health.gpus[1].temperature_c_max is None and health.gpus[1].reasons == {}
    assert "GPU 0's clocks were held down" in gpu_health.check(health, "").said
    assert "GPU 1" not in gpu_health.check(health, "").said


@pytest.mark.parametrize(
    ("row", "said"),
    [
        (f"{T.format(s=0)}, 0, inf, 61, 400, 1980, 1980, 0", "line 1: reasons is 'inf', not a clock event bitmask"),
        (f"{T.format(s=0)}, 0, 0xZZ, 61, 400, 1980, 1980, 0", "line 1: reasons is '0xZZ', not a clock event bitmask"),
        (f"{T.format(s=0)}, 0, {WELL}, 900, 400, 1980, 1980, 0", "line 1: temperature.gpu is '900', not a figure"),
        (f"{T.format(s=0)}, 0, {WELL}, 61, 400, 1980, 1980, 1.5", "line 1: ecc.errors.uncorrected.volatile.total"),
        (f"{T.format(s=0)}, ², {WELL}, 61, 400, 1980, 1980, 0", "line 1: GPU index '²' is not a GPU index"),
    ],
)
def test_a_row_no_nvidia_smi_writes_is_refused_naming_the_file_and_line(row: str, said: str) -> None:
    with pytest.raises(InputError, match="nvidia-smi's health rows \\(bench-c4.health.csv\\) ") as info:
        gpu_health.summarise(row, "bench-c4.health.csv", [], "")
    assert said in str(info.value)


def test_the_query_names_the_reasons_field_under_its_new_name_then_its_old_one() -> None:
    new, old = (gpu_health.query(r) for r in gpu_health.REASONS)
    assert new.split(",")[2] == "clocks_event_reasons.active" and old.split(",")[2] == "clocks_throttle_reasons.active"
    assert new.replace("event", "throttle") == old and len(new.split(",")) == len(gpu_health.COLUMNS)
