"""The one way a server a killed run left on record is stopped (ops/measured_boot.py stop_left_servers), for a
campaign's cells, an A/B's trial and a ladder's rung alike, on the in-memory target (tests/targets/memory_target.py):
which records are read, checked, stopped and cleared is routing, which no real process adds to (the campaign's
killed-runner tests stop real fake-engine processes by the same records in the slow lane)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger import server_file
from redline.ledger.campaign_file import cells_of
from redline.ledger.server_record import load_server, save_server
from redline.models import ServeConfig
from redline.ops.ladder.rung import stop_ladder_server
from redline.ops.measured_boot import server_record, stop_left_servers
from redline.ops.session import ServeSession
from redline.targets import ServerHandle
from tests.targets.memory_target import MemoryTarget

pytestmark = pytest.mark.anyio
CONFIG = ServeConfig(model="/models/m", max_model_len=4096)


async def left_up(target: MemoryTarget, record: Path, index: int, base: Path, on: str | None = None) -> ServerHandle:
    """A server started and recorded at `record`, as a run killed while it ran leaves it (`on`: the target the record
    names, where another's)."""
    handle = await target.start(["vllm", "serve"], env={}, cwd=None, log_path="boot.log")
    made = server_record(index, ServeSession(target, get_engine("vllm")), CONFIG, handle, 10)
    if on is not None:
        made = made.model_copy(update={"handle": handle.model_copy(update={"target": on})})
    record.parent.mkdir(parents=True, exist_ok=True)
    save_server(record, made, base)
    return handle


async def test_every_cell_a_killed_campaign_left_is_stopped_by_its_record_and_the_record_cleared(
    tmp_path: Path,
) -> None:
    target, results = MemoryTarget(), tmp_path / "campaigns" / "c1"
    a = await left_up(target, cells_of(results).server_file("a"), 1, results.parent)
    b = await left_up(target, cells_of(results).server_file("b"), 2, results.parent)
    other = await target.start(["vllm", "serve"], env={}, cwd=None, log_path="boot.log")  # on no record: left alone
    assert await stop_left_servers(cells_of(results).server_files(), target, "cell", results.parent) == 2
    assert target.stopped == [a, b] and await target.is_alive(other)
    assert cells_of(results).server_files() == []
    assert await stop_left_servers(cells_of(results).server_files(), target, "cell", results.parent) == 0


async def test_a_ladder_s_rung_and_an_ab_s_trial_go_through_the_same_stop(tmp_path: Path) -> None:
    target, ladder = MemoryTarget(), tmp_path / "ladders" / "l8b.yml"
    rung = await left_up(target, server_file(ladder), 3, ladder.parent)
    assert await stop_ladder_server(ladder, target) and target.stopped == [rung]
    assert not await stop_ladder_server(ladder, target)  # nothing left: nothing stopped
    trial_file = tmp_path / "ab" / "x" / "server.json"
    trial = await left_up(target, trial_file, 4, tmp_path)
    assert await stop_left_servers([trial_file], target, "trial", tmp_path) == 1
    assert target.stopped == [rung, trial] and load_server(trial_file, tmp_path) is None


async def test_a_record_on_another_target_is_refused_before_any_server_is_stopped(tmp_path: Path) -> None:
    target, results = MemoryTarget(), tmp_path / "campaigns" / "c1"
    await left_up(target, cells_of(results).server_file("a"), 1, results.parent)
    await left_up(target, cells_of(results).server_file("b"), 2, results.parent, on="gpu-1")
    with pytest.raises(InputError) as refused:
        await stop_left_servers(cells_of(results).server_files(), target, "cell", results.parent)
    assert "the server of cell 2 runs on target 'gpu-1', not 'local'" in str(refused.value)
    assert target.stopped == [] and len(cells_of(results).server_files()) == 2  # refused means untouched: both kept


async def test_a_record_a_redline_in_another_pid_namespace_left_is_refused_naming_it(tmp_path: Path) -> None:
    target, record = MemoryTarget(same_host_as_redline=True), tmp_path / "ab" / "x" / "server.json"
    await left_up(target, record, 1, tmp_path)
    kept = load_server(record, tmp_path)
    assert kept is not None and kept.owner is not None
    moved = kept.owner.model_copy(update={"pid_ns": "pid:[4026000003]"})
    save_server(record, kept.model_copy(update={"owner": moved}), tmp_path)
    with pytest.raises(InputError, match="another host or PID namespace") as refused:
        await stop_left_servers([record], target, "trial", tmp_path)
    assert "trial 1" in str(refused.value) and str(record) in str(refused.value)
    assert target.stopped == [] and load_server(record, tmp_path) is not None
