"""A measured boot's progress advances through its steps (issue 31: progress stalled, then jumped to 100%): the boot
against the boot time expected, ready at its share, and each bench when it starts and when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.models import ServeConfig
from redline.models.workloads import Load, WorkloadAt, WorkloadSpec
from redline.ops import session as sessions
from redline.ops.measured_boot import Keep, measured_boot
from redline.ops.session import BOOTED_AT, ServeSession
from redline.policy.workload import boot_benches
from tests.campaign.helpers import make_fake
from tests.targets.memory_target import MemoryTarget

pytestmark = pytest.mark.anyio
STEPS = boot_benches(
    [WorkloadAt(None, WorkloadSpec(input_len=128, output_len=16), [Load(concurrency=1), Load(concurrency=4)])],
    2,
    repeats=1,
)


class Heard:
    def __init__(self) -> None:
        self.said: list[tuple[float, str]] = []

    async def __call__(self, fraction: float, text: str) -> None:
        self.said.append((fraction, text))


async def test_each_step_moves_the_progress_when_it_starts_and_when_it_ends(tmp_path: Path) -> None:
    heard = Heard()
    session = ServeSession(MemoryTarget(), get_engine("vllm"), heard)
    config = ServeConfig(model="/m", max_model_len=4096, max_num_seqs=4, port=8123)
    keep = Keep(tmp_path / "server.json", 1, lambda *_: None)
    await measured_boot(session, config, STEPS, keep=keep, boot_deadline_s=60, bench_deadline_s=60)
    fractions = [f for f, _ in heard.said]
    assert fractions == sorted(fractions)  # it never goes back
    assert (BOOTED_AT, "ready after 0s") in heard.said  # the boot's share, once it is ready
    ends = [(f, t) for f, t in heard.said if "output tok/s" in t]
    assert len(ends) == len(STEPS) and ends[-1][0] == pytest.approx(1.0)  # the last bench's end: all of it
    assert ends[0][1].startswith("warming up with 2 requests: ") and ends[-1][1].startswith("concurrency 4: ")


async def test_a_waiting_boot_advances_against_the_last_boot_s_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sessions, "BOOT_POLL_S", 0.2)
    fake = make_fake(tmp_path, FAKE_VLLM_BOOT_S="2.0")
    config = ServeConfig(model=str(fake.model), max_model_len=4096, port=fake.port)
    heard: dict[str, list[float]] = {}
    async with fake.target() as target:
        for expected in (None, 2.0):  # the deadline (an hour) stands in; then the last boot's two seconds
            said = Heard()
            session = ServeSession(target, get_engine("vllm"), said)
            session.expected_boot_s = expected
            boot = await session.boot(config, 3600, benches=True)
            await session.stop(boot.handle)
            heard[str(expected)] = [f for f, t in said.said if t.startswith("booting for")]
    assert heard["None"] and max(heard["None"]) < 0.01  # an hour's deadline: the boot's 2 s barely move it
    waiting = heard["2.0"]
    assert waiting == sorted(waiting) and max(waiting) > 0.5 * BOOTED_AT  # it moves through the boot's share
    assert max(waiting) <= sessions.BOOT_SHOWN * BOOTED_AT  # and leaves the rest to the boot being ready
