"""Issue 32, item 8 (telemetry): what nvidia-smi and dcgmi print is untrusted input. A row neither tool writes (`inf`,
`²`, a 5,000-digit number, a share past 100%) is refused in one line naming the samples file, the field and the
line, and the bench goes on without telemetry, saying why; `[N/A]` is still a figure the GPU does not have.

The sampler (ops/telemetry.py) runs for real on the local target beside a sleeping process, with the stand-in tools
(tests/server/fake_nvidia_smi.py, tests/server/fake_dcgmi.py) on PATH printing the hostile values.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from redline.errors import InputError
from redline.models.telemetry import GpuTelemetry
from redline.ops.telemetry import GpuSampler
from redline.policy import dcgm, gpu_health, telemetry
from redline.targets import LocalTarget

pytestmark = pytest.mark.anyio
SERVER = Path(__file__).resolve().parent.parent / "server"
ROW = "2026/12/02 22:28:23.342, {i}, GPU-53cff458, {busy}, 23, 130049, {w}, 1980"
HOSTILE = [("utilization.gpu", "inf"), ("index", "²"), ("memory.used", "9" * 5000), ("utilization.memory", "150")]


async def sampled(tmp_path: Path, bench_s: float = 0.6) -> tuple[GpuTelemetry | None, str, float]:
    """One bench of bench_s (0.6: a few samples, 200 ms apart) beside a sleeping process: its telemetry as the sampler
    reads it (None where refused), why there is none, and how long the sampler took to start."""
    async with LocalTarget("local", workdir=str(tmp_path / "work")) as target:
        handle = await target.start(
            [sys.executable, "-c", "import time; time.sleep(60)"], env={}, cwd=None, log_path="s.log"
        )
        try:
            sampler = GpuSampler(target)
            began = time.monotonic()
            sampling = await sampler.start(handle, "bench-c4.json", 30)
            took = time.monotonic() - began
            await anyio.sleep(bench_s)
            found, _, why = await sampler.stop(handle, sampling)
        finally:
            await target.stop(handle, grace_s=0)
    return found, why, took


@pytest.mark.parametrize(
    ("tools", "env", "said"),
    [
        (["bin"], {"FAKE_GPU_VALUES": "utilization.gpu=inf"}, "nvidia-smi's samples (bench-c4.gpu.csv) line 1: "),
        (["bin", "dcgm-bin"], {"FAKE_DCGM_ROW": "0.5 ²"}, "dcgmi's samples (bench-c4.dcgm.txt) line 3: DRAMA is '²'"),
    ],
    ids=["nvidia-smi", "dcgmi"],
)
async def test_hostile_telemetry_a_row_no_tool_writes_is_no_telemetry_and_the_bench_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools: list[str], env: dict[str, str], said: str
) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([*(str(SERVER / t) for t in tools), os.environ["PATH"]]))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    found, why, _ = await sampled(tmp_path)
    check = telemetry.check(None, why)  # what the bench says, and it goes on: a check that holds
    assert found is None and check.ok and check.said.startswith(f"no GPU telemetry: {said}"), check.said
    assert check.said.endswith("refused") and "\n" not in check.said


@pytest.mark.parametrize(("field", "value"), HOSTILE, ids=[f for f, _ in HOSTILE])
def test_hostile_telemetry_each_hostile_nvidia_smi_figure_is_refused_naming_it(field: str, value: str) -> None:
    row = dict(zip(telemetry.QUERY, ROW.format(i=0, busy=50, w="400").split(", "), strict=True)) | {field: value}
    with pytest.raises(InputError) as refused:
        telemetry.summarise(", ".join(row.values()), 200, "bench-c4.gpu.csv", [])
    message = str(refused.value)
    assert message.startswith("nvidia-smi's samples (bench-c4.gpu.csv) line 1: ") and message.endswith("refused")
    assert field.replace("index", "GPU index") in message and value[:20] in message and "\n" not in message


@pytest.mark.parametrize("row", ["inf 0.3", "0.5 ²", "1.5 0.2", f"0.5 {'9' * 5000}", "nan 0.1"])
def test_hostile_telemetry_each_hostile_dcgmi_figure_is_refused_naming_it(row: str) -> None:
    with pytest.raises(InputError, match=r"^dcgmi's samples \(b.dcgm.txt\) line 1: (SMACT|DRAMA) is .* refused$"):
        dcgm.with_dcgm(None, f"GPU 0  {row}\n", "b.dcgm.txt")


def test_hostile_telemetry_unavailable_figures_stay_unknown_and_hostile_ones_are_refused() -> None:
    text = "\n".join(ROW.format(i=i, busy=b, w=w) for i, b, w in ((0, 50, "[N/A]"), (0, "[Not Supported]", "400")))
    [kept] = telemetry.rows(text)  # a row without a utilization figure is left out, as before
    assert kept["power.draw"] == "[N/A]"
    for i, busy in (("²", 50), ("0", "nan"), ("0", "-1"), ("0", "1e400"), ("99999", 50)):
        with pytest.raises(InputError, match=r"^f line 1: .* refused$"):
            telemetry.rows(ROW.format(i=i, busy=busy, w="400"), "f")
    assert dcgm.samples("GPU 0  N/A  0.358\n") == {0: [(None, 0.358)]}
    with pytest.raises(InputError, match="GPU index"):
        dcgm.samples("GPU ³  0.1  0.358\n")


async def test_hostile_telemetry_a_health_row_no_tool_writes_is_no_health_and_the_bench_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41, item 4: the health rows are the same untrusted output: a reasons bitmask that is not one refuses the
    health rows (said, naming the file and line), while the utilization samples are kept and the bench goes on."""
    monkeypatch.setenv("PATH", f"{SERVER / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GPU_VALUES", "clocks_event_reasons.active=0xnope")
    found, why, _ = await sampled(tmp_path)
    assert why == "" and isinstance(found, GpuTelemetry) and found.gpus and found.health is None
    assert found.health_why is not None and found.health_why.startswith(
        "nvidia-smi's health rows (bench-c4.health.csv)"
    )
    check = gpu_health.check(found.health, found.health_why)
    assert check.ok and "reasons is '0xnope', not a clock event bitmask (0x...): refused" in check.said
