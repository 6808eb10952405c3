"""Campaign cells at once (`parallel: N`): the fake engine in real child processes, on a local target that runs
two servers at once (tests/campaign/servers_at_once.py), as a cluster runs a pod per server.

Covers cells that overlap in time (the run's wall time near one cell's), the refusal on a target that runs
one server, a red cell that stops further cells from starting, and a killed runner's record per server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from redline.errors import InputError
from redline.ledger.campaign_file import cells_of, read_verdict
from redline.ledger.server_record import load_server
from redline.ops.campaign.results import campaign_status
from redline.ops.campaign.run import campaign_run
from tests.campaign.helpers import Fake, make_fake, wait_until_gone
from tests.campaign.servers_at_once import ServersAtOnce, servers_at_once
from tests.conftest import pid_running, processes_naming

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
SLOW_BENCH = {"FAKE_VLLM_BENCH_S": "1"}  # a cell of 1 warm-up and 2 benches takes over 3 s


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path)


def at_once(fake: Fake, **engine_env: str) -> ServersAtOnce:
    return servers_at_once(fake.root, {**fake.engine_env, **engine_env})


def results(fake: Fake) -> Path:
    return fake.campaigns / "c1"


def boots(fake: Fake) -> int:
    runs = fake.root / "target" / "runs"
    return len([d for d in runs.iterdir() if (d / "boot.log").exists()]) if runs.exists() else 0


async def test_two_cells_at_once_take_about_one_cells_time(fake: Fake) -> None:
    path = fake.write(parallel=2, replicates=0)
    async with at_once(fake, **SLOW_BENCH) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [(o.cell, o.verdict) for o in result.ran] == [("mnbt2048", "green"), ("mnbt8192", "green")]
    assert result.boots == 2 and boots(fake) == 2  # still one boot per cell
    a, b = (read_verdict(results(fake), c) for c in ("mnbt2048", "mnbt8192"))
    assert a is not None and b is not None
    assert a.started_at < b.ended_at and b.started_at < a.ended_at, "the two cells did not overlap"
    assert result.wall_s is not None and result.wall_s < 0.75 * (a.wall_s + b.wall_s), (result.wall_s, a, b)
    assert result.wall_s >= max(a.wall_s, b.wall_s)
    assert result.gpu_s == 0  # this host has no GPU: no GPU time, and no GPU words
    assert "up to 2 cells at once" in result.reason and "all green" in result.reason
    assert "no GPU on this host" in result.reason and "GPU-seconds" not in result.reason
    assert cells_of(results(fake)).server_files() == [] and wait_until_gone(fake.root) == []


async def test_more_cells_at_once_than_the_target_runs_servers_is_refused_before_anything_starts(fake: Fake) -> None:
    path = fake.write(parallel=2, replicates=0)
    for dry_run in (True, False):
        with pytest.raises(InputError) as exc:
            await campaign_run(path, fake.target(), i_understand_this_submits_jobs=True, dry_run=dry_run)
        assert "parallel: 2 runs 2 cells at once" in str(exc.value)
        assert "target 'local' runs 1 server(s) at a time" in str(exc.value) and "set parallel: 1" in str(exc.value)
    assert not (fake.root / "target").exists() and processes_naming(fake.root) == []

    dry = await campaign_run(path, at_once(fake), i_understand_this_submits_jobs=False, dry_run=True)
    assert dry.plan is not None and dry.plan.parallel == 2 and "2 cells at once" in dry.reason


def _red_first(fake: Fake, **changes: object) -> Path:
    # the fake GPU runs out of memory profiling more than 4096 batched tokens: the first cell is red at its boot,
    # while the second (at once with it) benches for seconds
    return fake.write(grid={"max_num_batched_tokens": [8192, 2048, 1024]}, parallel=2, replicates=0, **changes)


async def test_a_red_cell_stops_further_cells_from_starting_while_the_running_one_finishes(fake: Fake) -> None:
    path = _red_first(fake)
    async with at_once(fake, FAKE_VLLM_MAX_BATCHED_TOKENS="4096", **SLOW_BENCH) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [(o.cell, o.verdict) for o in result.ran] == [("mnbt8192", "red"), ("mnbt2048", "green")]
    assert result.stopped_early and "cell 'mnbt8192' is red" in result.reason and boots(fake) == 2
    assert read_verdict(results(fake), "mnbt1024") is None  # the third never started
    assert wait_until_gone(fake.root) == []


async def test_continue_on_red_runs_every_cell_at_once(fake: Fake) -> None:
    path = _red_first(fake, continue_on_red=True)
    async with at_once(fake, FAKE_VLLM_MAX_BATCHED_TOKENS="4096", **SLOW_BENCH) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert [o.verdict for o in result.ran] == ["red", "green", "green"] and not result.stopped_early
    assert "red: mnbt8192" in result.reason and boots(fake) == 3


async def test_a_cancelled_campaign_stops_every_running_cell_s_server(fake: Fake) -> None:
    path = fake.write(parallel=2, replicates=0)
    async with at_once(fake, FAKE_VLLM_BENCH_S="30") as target, anyio.create_task_group() as tg:
        tg.start_soon(lambda: campaign_run(path, target, i_understand_this_submits_jobs=True))
        with anyio.fail_after(60):
            while len(cells_of(results(fake)).server_files()) < 2:
                await anyio.sleep(0.05)
        assert campaign_status(path).running == ["mnbt2048", "mnbt8192"]
        tg.cancel_scope.cancel()
    assert cells_of(results(fake)).server_files() == [] and read_verdict(results(fake), "mnbt2048") is None
    assert processes_naming(fake.root) == []


async def test_a_killed_runner_leaves_a_record_per_server_and_the_next_run_stops_them_all(fake: Fake) -> None:
    path = fake.write(parallel=2, replicates=0)
    env = json.dumps({**fake.engine_env, "FAKE_VLLM_BENCH_S": "30"})
    runner = subprocess.Popen(
        [sys.executable, "-m", "tests.campaign.runner", str(path), str(fake.root / "target"), env, "at-once"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:  # kill -9 the runner once both cells' servers are started and recorded
        deadline = time.monotonic() + 60
        while len(records := [r for f in cells_of(results(fake)).server_files() if (r := load_server(f))]) < 2:
            assert time.monotonic() < deadline and runner.poll() is None, runner.stderr and runner.stderr.read()
            time.sleep(0.05)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.communicate(timeout=30)
    orphans = [r.handle.locator.pid for r in records]
    assert [f.parent.name for f in cells_of(results(fake)).server_files()] == ["mnbt2048", "mnbt8192"]
    assert all(pid_running(pid) for pid in orphans)
    assert campaign_status(path).running == ["mnbt2048", "mnbt8192"]

    async with at_once(fake) as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    assert not any(pid_running(pid) for pid in orphans)
    assert [(o.cell, o.verdict) for o in result.ran] == [("mnbt2048", "green"), ("mnbt8192", "green")]
    assert cells_of(results(fake)).server_files() == [] and campaign_status(path).running == []
    assert wait_until_gone(fake.root) == []
