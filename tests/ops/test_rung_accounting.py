"""A runner never loses track of a server: a boot the ladder refuses is stopped, and a bench
that outlasts its deadline is recorded as a failed smoke test."""

import pytest

from redline.errors import LadderError
from redline.ledger import read_ladder
from redline.ops.ladder.rung import ladder_server, rung_run, smoke_test, stop_ladder_server
from tests.conftest import processes_naming
from tests.ops.test_rung_bad_input import local_target, new_ladder

pytestmark = pytest.mark.anyio


async def test_a_boot_the_ladder_refuses_to_record_is_stopped(tmp_path):
    ladder = new_ladder(tmp_path, engine_version="0.99.0")  # the fake engine says 0.26.0
    before = ladder.read_bytes()
    async with local_target(tmp_path) as target:
        with pytest.raises(LadderError, match="0.26.0"):
            await rung_run(ladder, target)
    assert ladder_server(ladder) is None and ladder.read_bytes() == before
    assert processes_naming(tmp_path) == []


async def test_a_bench_past_its_deadline_is_a_failed_smoke_test(tmp_path):
    ladder = new_ladder(tmp_path, smoke_deadline_s=1)
    target = local_target(tmp_path)
    target.engine_env = {**target.engine_env, "FAKE_VLLM_BENCH_S": "30", "FAKE_VLLM_KV_TOKENS": "32768"}
    async with target:
        try:
            await rung_run(ladder, target)
            assert (await smoke_test(ladder, target)).rung.smoke_test.failed
        finally:
            await stop_ladder_server(ladder, target)
    smoke = read_ladder(ladder).rungs[-1].smoke_test
    assert any("did not finish within 1s" in line for line in smoke.log_lines), smoke.log_lines
    assert processes_naming(tmp_path) == []
