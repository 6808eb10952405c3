"""The bench starts once each GPU sampler has written its first row, or has ended (ops/telemetry.py, FIRST_ROW_S at
most): a tool slow to start on a busy host misses no short bench, a dcgmi with no host engine holds nothing up, and a
sampler that never writes leaves the bench its health rows and the reason it has no samples.

The sampler runs for real on the local target beside a sleeping process, with the stand-in tools
(tests/server/fake_nvidia_smi.py, tests/server/fake_dcgmi.py) on PATH; each bench here is stopped the moment its
sampler's start returns (tests/ops/test_telemetry_untrusted.py's sampled, with no bench time), as a bench shorter than
the tools' start-up would be.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from redline.ops.telemetry import FIRST_ROW_S
from tests.ops.test_telemetry_untrusted import SERVER, sampled

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("PATH", os.pathsep.join([str(SERVER / "bin"), str(SERVER / "dcgm-bin"), os.environ["PATH"]]))
    return monkeypatch


async def test_tools_slow_to_start_have_written_their_first_rows_when_the_bench_starts(
    tmp_path: Path, tools: pytest.MonkeyPatch
) -> None:
    tools.setenv("FAKE_GPU_SLOW_START", "2")
    tools.setenv("FAKE_DCGM_SLOW_START", "2")
    found, why, _ = await sampled(tmp_path, bench_s=0)
    assert found is not None and why == "", why
    (gpu,) = found.gpus
    assert gpu.samples >= 1 and found.dcgm_file == "bench-c4.dcgm.txt" and gpu.dram_active_pct == 35.8


async def test_a_dcgmi_without_its_host_engine_holds_no_bench_up(tmp_path: Path, tools: pytest.MonkeyPatch) -> None:
    tools.setenv("FAKE_DCGM_NO_ENGINE", "1")
    found, why, took = await sampled(tmp_path, bench_s=0)
    assert took < FIRST_ROW_S, took  # it ended at once: the start did not wait its limit for its first row
    assert found is not None and why == "" and found.dcgm_file is None
    (gpu,) = found.gpus
    assert gpu.samples >= 1 and gpu.dram_active_pct is None


@pytest.mark.slow  # waits FIRST_ROW_S
async def test_a_sampler_that_never_writes_is_waited_for_at_most_its_limit_and_the_health_rows_stay(
    tmp_path: Path, tools: pytest.MonkeyPatch
) -> None:
    tools.setenv("FAKE_GPU_SLOW_START", "120")  # nvidia-smi's samples never start; its one-row health queries do
    tools.setenv("FAKE_DCGM_NO_ENGINE", "1")
    found, why, took = await sampled(tmp_path, bench_s=0)
    assert FIRST_ROW_S - 1 <= took < FIRST_ROW_S + 15, took
    assert found is not None and found.gpus == [] and why == ""
    assert found.health is not None and found.health.file == "bench-c4.health.csv"
