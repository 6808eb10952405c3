"""A/Bs whose arms boot both engines: each arm its own engine, every arm benched by the one client (vLLM's, the
openai backend against SGLang), prefix caching matched or the A/B refused, and a verdict that says which engine won.

The run boots the fake vLLM and the fake SGLang (tests/server/fake_sglang.py: SGLang 0.5.17's own log texts) through
the real LocalTarget, with FAKE_VLLM_DECODE_MODEL=1 so the figures follow each server (SGLang's 1.25x faster)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from redline.errors import InputError
from redline.ledger.ab_file import AbPaths, read_trial
from redline.models.ab import AbSpec
from redline.ops.ab.result import ab_summary
from redline.ops.ab.run import ab_run
from tests.campaign.helpers import Fake, make_fake
from tests.conftest import processes_naming
from tests.rigor.helpers import ab_spec
from tests.server.helpers import FAKE_SGLANG, FAKE_VLLM

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return make_fake(tmp_path, FAKE_VLLM_DECODE_MODEL="1", FAKE_SGLANG_SPEEDUP="1.25")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def engines_spec(
    fake: Fake, vllm: dict[str, Any] | None = None, sglang: dict[str, Any] | None = None, **changes: Any
) -> AbSpec:
    """A vLLM arm (the baseline) against an SGLang arm, one serve config but for what each arm adds."""
    serve = {"model": str(fake.model), "max_model_len": 4096, "port": fake.port}
    arms = [
        {"name": "vllm", "engine": "vllm", "serve": serve | (vllm or {})},
        {"name": "sglang", "engine": "sglang", "serve": serve | (sglang or {})},
    ]
    return ab_spec(fake, name="engines", baseline="vllm", arms=arms, **changes)


async def dry(ws: Path, fake: Fake, spec: AbSpec):  # type: ignore[no-untyped-def]
    return await ab_run(ws, spec, fake.two_engine_target(), i_understand_this_submits_jobs=False, dry_run=True)


async def test_a_dry_run_boots_each_arm_by_its_engine_and_benches_both_with_the_one_client(
    fake: Fake, ws: Path
) -> None:
    plan = (await dry(ws, fake, engines_spec(fake))).plan
    assert plan is not None and plan.engines == ["vllm", "sglang"] and plan.engine == "vllm"
    assert [(a.name, a.engine) for a in plan.arms] == [("vllm", "vllm"), ("sglang", "sglang")]
    assert [(s.arm, s.trial) for s in plan.trials][:2] == [("vllm", 1), ("sglang", 1)]  # interleaved across engines
    for step in plan.trials:
        engine = {
            "vllm": [sys.executable, str(FAKE_VLLM), "serve"],
            "sglang": [sys.executable, str(FAKE_SGLANG), "serve"],
        }
        assert step.boot_command[:3] == engine[step.arm]
        for argv in [step.warmup_command, *step.bench_commands]:
            assert argv is not None and argv[:4] == [sys.executable, str(FAKE_VLLM), "bench", "serve"]
            assert argv[argv.index("--backend") + 1] == {"vllm": "vllm", "sglang": "openai"}[step.arm]
    sglang = next(s for s in plan.trials if s.arm == "sglang")
    assert "--context-length" in sglang.boot_command and "--max-running-requests" in sglang.boot_command
    assert processes_naming(fake.root) == []


@pytest.mark.parametrize(
    ("vllm", "sglang", "listed"),
    [
        ({}, {"enable_prefix_caching": False}, "vllm (vllm): on (the engine's default); sglang (sglang): off (set)"),
        ({"enable_prefix_caching": False}, {}, "vllm (vllm): off (set); sglang (sglang): on (the engine's default)"),
    ],
)
async def test_arms_of_two_engines_unmatched_in_prefix_caching_are_refused(
    fake: Fake, ws: Path, vllm: dict, sglang: dict, listed: str
) -> None:
    with pytest.raises(InputError) as exc:
        await dry(ws, fake, engines_spec(fake, vllm, sglang))
    assert str(exc.value) == (
        f"arms of vllm and sglang differ in prefix caching ({listed}): a comparison across engines needs it matched, "
        "or a prefix-cache (radix) replay can fake a win; set enable_prefix_caching the same for every arm"
    )
    assert not (ws / "ab").exists() and processes_naming(fake.root) == []


async def test_prefix_caching_off_in_both_arms_plans(fake: Fake, ws: Path) -> None:
    off = {"enable_prefix_caching": False}
    plan = (await dry(ws, fake, engines_spec(fake, off, off))).plan
    assert plan is not None
    boots = {a.name: a.boot_command for a in plan.arms}
    assert "--no-enable-prefix-caching" in boots["vllm"] and "--disable-radix-cache" in boots["sglang"]


async def test_an_arm_naming_a_campaign_cell_boots_the_cells_engine(fake: Fake, ws: Path) -> None:
    (ws / "campaigns").mkdir()
    (ws / "campaigns" / "c1.yml").write_text(json.dumps(fake.spec(grid={"engine": ["vllm", "sglang"]})))
    cells = [{"name": n, "campaign": "campaigns/c1.yml", "cell": n} for n in ("vllm", "sglang")]
    plan = (await dry(ws, fake, ab_spec(fake, name="cells", baseline="vllm", arms=cells))).plan
    assert plan is not None and [(a.name, a.engine) for a in plan.arms] == [("vllm", "vllm"), ("sglang", "sglang")]
    wrong = [cells[0], {**cells[1], "engine": "vllm"}]
    with pytest.raises(InputError) as exc:
        await dry(ws, fake, ab_spec(fake, name="cells", baseline="vllm", arms=wrong))
    assert "arm 'sglang': engine 'vllm', but cell 'sglang' of campaigns/c1.yml boots 'sglang'" in str(exc.value)


async def test_a_three_trial_ab_across_engines_is_a_verdict_that_says_sglang_won(fake: Fake, ws: Path) -> None:
    async with fake.two_engine_target() as target:
        result = await ab_run(ws, engines_spec(fake, claim="latency"), target, i_understand_this_submits_jobs=True)
    v = result.verdict
    assert v is not None and v.rigor == "VERDICT" and v.failed == [], v.summary
    assert v.champion == "sglang" and v.outcome == "improvement"
    caching = next(r for r in v.rules if r.rule == "matched_prefix_caching")
    assert caching.held and caching.why == "every trial ran with prefix caching on"  # each engine's default, as run
    assert result.summary.startswith("VERDICT: sglang improves on vllm (median_tpot_ms)")
    assert "(sglang won). " in result.summary and "sglang (sglang) " in result.summary
    by_arm = {a.arm: a for a in result.arms}
    assert (by_arm["vllm"].engine, by_arm["sglang"].engine) == ("vllm", "sglang")
    point = by_arm["sglang"].points[0].context
    assert (point.engine.name, point.engine.version) == ("sglang", "0.5.17")
    assert point.bench is not None and (point.bench.client, point.bench.backend, point.bench.version) == (
        "vllm",
        "openai",
        None,
    )
    vllm_point = by_arm["vllm"].points[0].context
    assert vllm_point.bench is not None and (vllm_point.bench.backend, vllm_point.bench.version) == ("vllm", "0.26.0")
    record = read_trial(AbPaths(ws, "engines"), "sglang", 1)
    assert record is not None and record.engine == "sglang" and record.engine_version == "0.5.17"
    assert processes_naming(fake.root) == []

    _, summaries, again = ab_summary(ws, "engines")  # read back from the trial files alone
    assert [s.engine for s in summaries] == ["vllm", "sglang"] and again.champion == "sglang"
