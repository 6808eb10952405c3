"""A boot that outlasts its ladder's deadline is recorded as timeout_boot, and its server is stopped."""

import pytest

from redline.ledger import read_ladder
from redline.models import BootStatus
from redline.ops.ladder.rung import ladder_server, rung_run
from tests.conftest import processes_naming
from tests.ops.test_rung_bad_input import local_target, new_ladder

pytestmark = pytest.mark.anyio


async def test_a_boot_past_its_deadline_is_timeout_boot_and_leaves_nothing_running(tmp_path):
    ladder = new_ladder(tmp_path, boot_deadline_s=2)
    target = local_target(tmp_path)
    target.engine_env = {**target.engine_env, "FAKE_VLLM_BOOT_S": "30"}  # a model that loads slower than the deadline
    async with target:
        outcome = await rung_run(ladder, target)
    assert outcome.rung.status is BootStatus.TIMEOUT_BOOT
    assert "within 2s" in outcome.rung.reason and "last log line" in outcome.rung.reason
    assert 2 <= outcome.rung.boot_s < 15
    assert outcome.next.route == "diagnose"  # a timeout is not a context failure: no blind retry
    assert ladder_server(ladder) is None
    assert processes_naming(tmp_path) == []


def test_the_deadline_is_the_ladders_own(tmp_path):
    assert read_ladder(new_ladder(tmp_path, boot_deadline_s=7200)).boot_deadline_s == 7200
