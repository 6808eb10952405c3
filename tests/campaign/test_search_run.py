"""A campaign's search for real: the fake engine in child processes through the real LocalTarget, its figures set by
each server's --max-num-batched-tokens (FAKE_VLLM_DECODE_MODEL: throughput rises with it), so the grid's best cell
is known. The search boots under half the grid, finds its best, keeps search.yml, and resumes after a kill -9 with
the cell it was booting."""

from __future__ import annotations

import signal

import pytest

from redline.ledger.campaign_file import cells_of, read_boots, read_verdicts
from redline.ledger.search_file import read_search_log
from redline.ledger.server_record import load_server
from redline.ops.campaign.plan import load_campaign
from redline.ops.campaign.results import champion_select
from redline.ops.campaign.run import campaign_run
from tests.campaign.helpers import Fake, make_fake, wait_until_gone
from tests.campaign.test_run import _runner, _wait_for, boots, results
from tests.server.helpers import fake_servers

pytestmark = pytest.mark.anyio
GRID = {"max_num_batched_tokens": [1024, 2048, 4096, 8192, 16384, 32768], "max_num_seqs": [64, 128]}


@pytest.fixture
def fake(tmp_path):  # type: ignore[no-untyped-def]
    return make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1")


def searched(fake: Fake, **changes: object):  # type: ignore[no-untyped-def]
    return fake.write(**{"grid": GRID, "search": {"initial": 3, "patience": 3}, **changes})


async def test_a_search_boots_under_half_the_grid_and_finds_the_grid_s_best(fake: Fake) -> None:
    path = searched(fake)
    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    loaded = load_campaign(path)
    verdicts, replicates = read_boots(loaded.results, loaded.names)
    again = sum(len(r) for r in replicates.values())
    assert boots(fake) == len(verdicts) + again == result.boots and len(verdicts) <= len(loaded.names) // 2
    assert "the search booted" in result.reason and "stopped" in result.reason
    # the best booted again once the opening cells were judged, so the stop rule's band was measured; then the top two
    assert again == 2 and "noise band" in result.reason and "(measured: the boot-to-boot spread" in result.reason
    assert max(v.levers["max_num_batched_tokens"] for v in verdicts.values()) == 32768  # where the grid's best is
    champion = champion_select(path)
    assert champion.rigor == "DRAFT" and champion.champion is not None
    assert verdicts[champion.champion].levers["max_num_batched_tokens"] == 32768
    log = read_search_log(loaded.results)
    assert log is not None and log.stopped and {s.cell for s in log.steps[:-1]} == set(verdicts)
    assert all(s.measured is not None for s in log.steps[:-1]) and log.steps[-1].cell is None
    assert log.steps[0].cell == loaded.names[0] and "opening" in log.steps[0].why  # the baseline first
    assert fake_servers(fake.port) == [] and wait_until_gone(fake.root) == []


async def test_a_search_across_two_workloads_finds_the_cell_the_champion_crowns_across_them(fake: Fake) -> None:
    workloads = {"chat": {"input_len": 128, "output_len": 16}, "long": {"input_len": 512, "output_len": 32}}
    path = searched(fake, workload=None, workloads=workloads, combine="all", replicates=0)
    async with fake.target() as target:
        result = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    loaded = load_campaign(path)
    verdicts = read_verdicts(loaded.results, loaded.names)
    assert boots(fake) == len(verdicts) == result.boots <= len(loaded.names) // 2, result.reason
    assert all({r.workload for r in v.results} == {"chat", "long"} for v in verdicts.values())
    log = read_search_log(loaded.results)
    assert log is not None and log.steps[0].measured == 1.0  # the baseline: no gain over itself, on every workload
    champion = champion_select(path)
    assert champion.combine == "all" and champion.champion is not None
    top = max(s.measured for s in log.steps if s.measured is not None)
    best = {s.cell for s in log.steps if s.measured == top}  # seqs 64 and 128 tie exactly: the fake ignores seqs
    assert champion.champion in best  # a cell the search scored best is the one crowned across workloads
    assert verdicts[champion.champion].levers["max_num_batched_tokens"] == 32768
    assert fake_servers(fake.port) == [] and wait_until_gone(fake.root) == []


def _booting_second(fake: Fake):  # type: ignore[no-untyped-def]
    """The search's second step once its cell's server is started and recorded (it boots for 3 s then)."""
    log = read_search_log(results(fake))
    if log is None or len(log.steps) != 2 or log.steps[1].cell is None:
        return None
    return log.steps[1] if load_server(cells_of(results(fake)).server_file(log.steps[1].cell)) is not None else None


async def test_a_killed_search_runs_the_cell_it_was_in_again_before_it_proposes_anything(fake: Fake) -> None:
    path = searched(fake, replicates=0)
    runner = _runner(fake, path, FAKE_VLLM_BOOT_S="3")
    try:  # kill -9 while the second proposed cell boots: its step is on disk, its verdict is not
        second = _wait_for(lambda: _booting_second(fake))
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.communicate(timeout=30)
    assert second.measured is None and not (results(fake) / "cells" / second.cell / "verdict.yml").exists()

    async with fake.target() as target:
        resumed = await campaign_run(path, target, i_understand_this_submits_jobs=True)
    log = read_search_log(results(fake))
    assert log is not None and log.steps[1].cell == second.cell and log.steps[1].measured is not None
    cells = [s.cell for s in log.steps if s.cell is not None]
    # the resumed run counts the whole search, the cell the killed run finished included, not only its own boots
    assert resumed.boots == len(cells) - 1
    assert f"the search booted {len(cells)} of 12 cells (1 in earlier runs)" in resumed.reason, resumed.reason
    assert len(cells) == len(set(cells))  # no cell proposed twice, the killed one run again in its own step
    assert fake_servers(fake.port) == [] and wait_until_gone(fake.root) == []
