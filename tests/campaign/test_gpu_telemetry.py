"""GPU telemetry beside every ranked bench, on the fake engine through the real LocalTarget, with a stand-in
nvidia-smi on PATH (tests/server/fake_nvidia_smi.py, in the real tool's shape; the real one's samples from the H200
are tests/data/vllm-0.26.0-h200-telemetry/): each bench keeps its samples file beside its result and a summary in its
trial, no sampler outlives its bench, a GPU held by a process outside the server's group flags every bench (red,
never ranked), a host without nvidia-smi says so in each trial, and one with DCGM keeps its DRAM and SM active too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from redline.errors import RunFailed
from redline.ledger.campaign_file import read_verdicts
from redline.models.campaign_results import CellVerdict
from redline.ops.campaign.plan import load_campaign
from redline.ops.campaign.report import campaign_report
from redline.ops.campaign.run import campaign_run
from redline.ops.campaign_read import Loaded
from tests.campaign.helpers import Fake, make_fake
from tests.conftest import processes_naming

pytestmark = pytest.mark.anyio
BIN = Path(__file__).resolve().parent.parent / "server" / "bin"
FAKE_SMI = BIN.parent / "fake_nvidia_smi.py"
DCGM_BIN = BIN.parent / "dcgm-bin"  # a stand-in dcgmi (tests/server/fake_dcgmi.py), on PATH only where a test says


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return make_fake(
        tmp_path, FAKE_VLLM_BENCH_S="3"
    )  # long enough for the samplers' first rows on a busy host (1.5 s was not, once)


async def _run(fake: Fake):  # type: ignore[no-untyped-def]
    path = fake.write(grid={"max_num_seqs": [64]}, concurrencies=[1, 2])
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    loaded = load_campaign(path)
    return loaded, read_verdicts(loaded.results, loaded.names)


async def _green(fake: Fake) -> tuple[Loaded, CellVerdict]:
    """The one cell's run, green."""
    loaded, verdicts = await _run(fake)
    (cell,) = verdicts.values()
    assert cell.verdict == "green", cell.reason
    return loaded, cell


async def test_each_bench_keeps_its_gpu_samples_beside_it_and_no_sampler_outlives_it(fake: Fake) -> None:
    loaded, cell = await _green(fake)
    for result in cell.results:
        (trial,) = result.repeats
        t = trial.telemetry
        assert (
            t is not None
            and t.interval_ms == 200
            and t.others == []
            and t.file == f"bench-c{result.concurrency}.gpu.csv"
        )
        (gpu,) = t.gpus
        assert gpu.samples >= 2 and gpu.gpu_busy_pct == 87 and gpu.memory_busy_pct == 41 and gpu.power_w is None
        kept = (loaded.results / "cells" / cell.cell / t.file).read_text().splitlines()
        assert len(kept) == gpu.samples and all(", 87, 41, " in line for line in kept)
        said = {c.check: c for c in trial.checks}["gpu"]
        assert said.ok and "GPU 0 ran kernels 87% of the time and read or wrote memory 41%" in said.said
    assert processes_naming(FAKE_SMI) == []


async def test_a_gpu_another_process_holds_flags_every_bench_and_the_cell_is_never_ranked(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GPU_PIDS", str(os.getpid()))  # this test's own process: not in the server's group
    with pytest.raises(RunFailed, match="another process held the GPU during the benches: run where"):
        await _run(fake)  # its only cell measured a shared GPU: the run measured nothing usable, and fails
    loaded = load_campaign(fake.campaigns / "c1.yml")
    (cell,) = read_verdicts(loaded.results, loaded.names).values()
    assert cell.verdict == "red"
    for result in cell.results:
        gpu = {c.check: c for t in result.repeats for c in t.checks}["gpu"]
        assert not gpu.ok and f"pid {os.getpid()} (python3, 1024 MiB)" in gpu.said and "not ranked" in gpu.said
        assert not result.ok


async def test_a_host_without_nvidia_smi_says_so_in_each_trial(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.environ["PATH"].replace(f"{BIN}{os.pathsep}", ""))
    _, verdicts = await _run(fake)
    (cell,) = verdicts.values()
    assert cell.verdict == "green"
    for trial in (t for r in cell.results for t in r.repeats):
        assert trial.telemetry is None
        assert {c.check: c.said for c in trial.checks}["gpu"] == "no GPU telemetry: nvidia-smi is not on target local"
    text = YAML(typ="safe").load((fake.campaigns / "c1" / "cells" / cell.cell / "verdict.yml").read_text())
    assert text["results"][0]["repeats"][0]["telemetry"] is None


async def test_where_the_host_has_dcgm_each_bench_also_keeps_its_dram_and_sm_active(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both tools here take longer to write their first row than the bench takes (4 s, 3 s): each bench starts once
    they have, so none is missed (a busy CI host once stopped them before their first row, and the bench had none)."""
    monkeypatch.setenv("PATH", f"{DCGM_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU_SLOW_START", "4")
    monkeypatch.setenv("FAKE_DCGM_SLOW_START", "4")
    loaded, cell = await _green(fake)
    for result in cell.results:
        (trial,) = result.repeats
        t = trial.telemetry
        assert t is not None, {c.check: c.said for c in trial.checks}["gpu"]
        assert t.dcgm_file == f"bench-c{result.concurrency}.dcgm.txt"
        (gpu,) = t.gpus
        assert (gpu.sm_active_pct, gpu.dram_active_pct, gpu.memory_busy_pct) == (61.2, 35.8, 41)
        kept = (loaded.results / "cells" / cell.cell / t.dcgm_file).read_text()
        assert kept.startswith("#Entity   SMACT        DRAMA") and "GPU 0     0.612        0.358" in kept
        said = {c.check: c.said for c in trial.checks}["gpu"]
        assert "memory 41% (DCGM: DRAM active 36%, SM active 61%)" in said
    assert processes_naming(DCGM_BIN.parent / "fake_dcgmi.py") == []  # no dmon outlives its bench


async def test_a_gpu_throttled_mid_bench_flags_that_bench_it_is_not_ranked_and_the_report_says_why(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 41, item 4: the stand-in nvidia-smi reports a hardware thermal slowdown from its second health row on, in
    the second cell's bench at c=2 only; that bench is flagged with the reason, its cell is not ranked, the
    cell (the baseline) is ranked alone, and the report names the bench and the reason. The old driver's field name is asked
    when the new one is refused, and a kernel log that cannot be read says so without flagging."""
    monkeypatch.setenv("FAKE_GPU_SICK", "bench-c2:clocks_event_reasons.active=0x0000000000000040;temperature.gpu=94")
    monkeypatch.setenv("FAKE_GPU_SICK_ONCE", f"{tmp_path / 'sick'}:2")  # the second cell's: the baseline stays well
    path = fake.write(grid={"max_num_seqs": [64, 128]}, concurrencies=[1, 2], continue_on_red=True)
    async with fake.target() as target:
        await campaign_run(path, target, i_understand_this_submits_jobs=True)
    loaded = load_campaign(path)
    verdicts = read_verdicts(loaded.results, loaded.names)
    sick = [v for v in verdicts.values() if v.verdict == "red"]
    (cell,) = sick
    (well,) = [v for v in verdicts.values() if v.verdict == "green"]
    flagged = {r.concurrency: {c.check: c for t in r.repeats for c in t.checks}["gpu_health"] for r in cell.results}
    assert flagged[1].ok and "no clock slowdown" in flagged[1].said and "no XID logged" in flagged[1].said
    assert not flagged[2].ok and "hardware thermal slowdown in" in flagged[2].said and "94 C at most" in flagged[2].said
    assert "not ranked" in cell.reason and "hardware thermal slowdown" in cell.reason
    (trial,) = next(r for r in cell.results if r.concurrency == 2).repeats
    assert trial.telemetry is not None and trial.telemetry.health is not None
    (gpu,) = trial.telemetry.health.gpus
    assert gpu.reasons["hardware thermal slowdown"] >= 1 and gpu.samples >= 3 and gpu.temperature_c_max == 94
    kept = (loaded.results / "cells" / cell.cell / "bench-c2.health.csv").read_text()
    assert "0x0000000000000040, 94" in kept
    report = campaign_report(path)
    assert well.cell == loaded.baseline and [c.cell for c in report.champion.excluded] == [cell.cell]
    text = (loaded.results / "report.md").read_text()
    assert "## Benches flagged" in text and "hardware thermal slowdown" in text and f"**{cell.cell}**" in text


async def test_an_old_driver_and_a_closed_kernel_log_still_read_health_and_say_what_they_could_not(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GPU_OLD_DRIVER", "1")
    monkeypatch.setenv("FAKE_DMESG_DENIED", "1")
    _, cell = await _green(fake)
    for trial in (t for r in cell.results for t in r.repeats):
        said = {c.check: c for c in trial.checks}["gpu_health"]
        assert said.ok and "XIDs not read (the kernel log (dmesg) is not readable on target local)" in said.said
        assert trial.telemetry is not None and trial.telemetry.health is not None
        assert trial.telemetry.health.gpus[0].samples >= 2
