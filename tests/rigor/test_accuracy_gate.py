"""A champion that can change the model's answers is closed and written back only with its accuracy gate's pass.

The real H200 A/B (tests/data/vllm-0.26.0-h200-ab, judged on latency: mnbt8192 a VERDICT's champion over mnbt2048) is read back with its
champion's trials rewritten to turn on an fp8 KV cache, then given answers by hand (trials/<arm>-1/accuracy.json, as
ab_run keeps them): with none, with answers that part from the baseline's, with answers that agree. The gate is judged
from disk alone (ops/ab/accuracy.py over policy/accuracy.py); the close and champion_apply read it. On the memory
target (tests/targets/memory_target.py, its servers made to answer the completions API): the ask is one POST through
the target, and an A/B asks each arm once where an arm risks the answers, and never where none does. The ask through
a real server is proved by tests/server/test_real_vllm_accuracy_gate.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from redline.engines import get_engine
from redline.errors import InputError
from redline.ledger.ab_file import AbPaths
from redline.models import ServeConfig
from redline.models.ab import AbResult
from redline.models.accuracy import Answer, Answers
from redline.ops.ab.accuracy import ask, prompt_set
from redline.ops.ab.apply import champion_apply
from redline.ops.ab.result import ab_close
from redline.ops.ab.run import ab_run
from redline.ops.evidence.known_good import known_good_record
from redline.ops.requests_evidence import ChampionApplyRequest, KnownGoodRecordRequest
from redline.ops.session import ServeSession
from redline.targets import ServerHandle
from tests.campaign.helpers import make_fake
from tests.rigor.helpers import ab_spec, latency_champion
from tests.targets.memory_target import MemoryTarget

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200-ab"
AB, CHAMPION, BASELINE = "l8b-mnbt", "mnbt8192", "mnbt2048"
VALUES = "vllm:\n  extraArgs:\n    - --max-num-batched-tokens=2048   # the deploy's\n"


def with_fp8_champion(tmp_path: Path, *, real_weights: bool) -> Path:
    """The H200 A/B with its champion on an fp8 KV cache, closed but for the gate, and a values file to write; with
    `real_weights`, every trial rewritten as if it had loaded the checkpoint (it ran on dummy weights). On latency,
    mnbt8192 is the VERDICT's champion (9% better median TPOT; its TTFT the baseline's: tests/rigor/helpers.py)."""
    latency_champion(tmp_path)
    for trial in (tmp_path / "ab" / AB / "trials").glob("*/trial.yml"):
        text = trial.read_text()
        if real_weights:
            text = text.replace("load_format: dummy", "load_format: auto")
        if trial.parent.name.startswith(CHAMPION):
            text = text.replace("\n  kv_cache_dtype:\n", "\n  kv_cache_dtype: fp8\n", 1)
        trial.write_text(text)
    known_good_record(tmp_path, KnownGoodRecordRequest(from_ab=AB, arm=CHAMPION, why="the A/B's champion"))
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "values.yaml").write_text(VALUES)
    return tmp_path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return with_fp8_champion(tmp_path, real_weights=True)


def answer(ws: Path, arm: str, rows: list[list[str]]) -> None:
    answers = Answers(prompt_set=1, max_tokens=3, answers=[Answer(tokens=r, logprobs=[-0.1] * len(r)) for r in rows])
    folder = AbPaths(ws, AB).trial_dir(arm, 1)
    (folder / "accuracy.json").write_text(answers.model_dump_json())


APPLY = ChampionApplyRequest(ab=AB, values="deploy/values.yaml", baseline="llama8b-prod", dry_run=True)


def test_a_champion_on_fp8_kv_is_refused_without_the_gate_s_pass_and_written_back_with_it(ws: Path) -> None:
    _, arms, champion, close = ab_close(ws, AB)
    assert champion is not None and champion.accuracy is not None and champion.accuracy.status == "not_run"
    assert next(a for a in arms if a.arm == BASELINE).accuracy is None  # the baseline risks nothing against itself
    assert close is not None and not close.closed
    assert close.missing == [
        "an accuracy gate's pass, as it turns on kv_cache_dtype fp8: it is not run: the arm recorded no answers (a "
        "trial that benched in full asks them: run ab_run again) (ab_run against the baseline arm runs it)"
    ]
    with pytest.raises(InputError, match="can change the model's answers: it is written back only with an accuracy"):
        champion_apply(ws, APPLY)

    rows = [["a", "b", "c"]] * 8
    answer(ws, BASELINE, rows)
    answer(ws, CHAMPION, [["x", "b", "c"]] * 3 + rows[3:])  # 3 of 8 part at their first token
    _, _, champion, close = ab_close(ws, AB)
    assert champion is not None and champion.accuracy is not None and champion.accuracy.status == "fail"
    assert champion.accuracy.exact_share == 0.625 and close is not None and not close.closed
    with pytest.raises(InputError, match="it is fail: fail against 'mnbt2048' on 8 prompts x 3 tokens: exact 62%"):
        champion_apply(ws, APPLY)

    answer(ws, CHAMPION, rows)
    _, _, champion, close = ab_close(ws, AB)
    assert champion is not None and champion.accuracy is not None and champion.accuracy.status == "pass"
    assert close is not None and close.closed, close
    dry = champion_apply(ws, APPLY)
    assert "--kv-cache-dtype=fp8" in dry.flags and "+    - --kv-cache-dtype=fp8" in dry.diff


def test_a_gate_on_dummy_weights_is_never_a_pass_even_when_every_answer_agrees(tmp_path: Path) -> None:
    ws = with_fp8_champion(tmp_path, real_weights=False)  # as the H200 ran it: random weights, no checkpoint read
    rows = [["a", "b", "c"]] * 8
    answer(ws, BASELINE, rows)
    answer(ws, CHAMPION, rows)
    _, _, champion, close = ab_close(ws, AB)
    assert champion is not None and champion.accuracy is not None
    gate = champion.accuracy
    assert gate.status == "dummy_weights" and gate.exact_share == 1.0  # the figures kept, the pass withheld
    assert gate.why.startswith("dummy weights (load_format dummy) in this A/B: these figures compare random weights'")
    assert close is not None and not close.closed
    assert close.missing == [
        f"an accuracy gate's pass, as it turns on kv_cache_dtype fp8: {gate.why} (ab_run against the baseline arm "
        "runs it)"
    ]
    with pytest.raises(InputError, match="written back only with an accuracy"):
        champion_apply(ws, APPLY)


class Answering(MemoryTarget):
    """A memory target whose running servers answer the completions API: each prompt's answer is its own index."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str, float]] = []

    async def http_text(
        self, handle: ServerHandle, url: str, *, body: str | None = None, timeout_s: float = 5.0
    ) -> str | None:
        if body is None or not url.endswith("/v1/completions") or not await self.is_alive(handle):
            return await super().http_text(handle, url)  # its metrics; a prefix-cache reset it does not serve
        self.asked.append((url, body, timeout_s))
        n = len(prompt_set().prompts)
        choices = [{"index": i, "logprobs": {"tokens": [str(i)], "token_logprobs": [-1.0]}} for i in range(n)]
        return json.dumps({"choices": choices})


@pytest.mark.anyio
async def test_the_ask_goes_through_the_target_as_one_post_of_every_prompt() -> None:
    target = Answering()
    session = ServeSession(target, get_engine("vllm"))
    config = ServeConfig(model="/models/tiny", max_model_len=1024, port=8123)
    boot = await session.boot(config, 60)
    got = await ask(session, boot.handle, config)
    [(url, body, timeout_s)] = target.asked
    assert url == "http://127.0.0.1:8123/v1/completions" and timeout_s >= 60
    assert json.loads(body)["prompt"] == prompt_set().prompts and json.loads(body)["logprobs"] == 1
    assert got.error is None and [a.tokens for a in got.answers[:2]] == [["0"], ["1"]]
    await session.stop(boot.handle)
    gone = await ask(session, boot.handle, config)
    assert gone.answers == [] and "the server did not answer 200 to a POST of http://127.0.0.1:8123" in (
        gone.error or ""
    )


async def _run(tmp_path: Path, arms: dict[str, dict[str, Any]], trials: int) -> tuple[AbResult, Answering, Path]:
    """An A/B of `arms` (each the fake's serve config with its changes; the first the baseline) on the answering
    memory target."""
    fake = make_fake(tmp_path)
    serve = {"model": str(fake.model), "max_model_len": 4096, "port": fake.port}
    made = [{"name": name, "serve": serve | changes} for name, changes in arms.items()]
    spec = ab_spec(fake, "gate", concurrencies=[1], trials=trials, baseline=next(iter(arms)), arms=made)
    target, ws = Answering(), tmp_path / "ws"
    async with target:
        result = await ab_run(ws, spec, target, i_understand_this_submits_jobs=True)
    return result, target, ws


@pytest.mark.anyio
async def test_an_ab_whose_arm_risks_the_answers_asks_each_arm_once_and_an_ab_that_risks_nothing_asks_none(
    tmp_path: Path,
) -> None:
    result, target, ws = await _run(tmp_path / "risk", {"auto": {}, "fp8": {"kv_cache_dtype": "fp8"}}, trials=2)
    assert result.ran == ["auto-1", "fp8-1", "auto-2", "fp8-2"] and len(target.asked) == 2  # each arm's first trial
    paths = AbPaths(ws, "gate")
    assert [(paths.trial_dir(a, k) / "accuracy.json").is_file() for a in ("auto", "fp8") for k in (1, 2)] == [
        True,
        False,
        True,
        False,
    ]
    arms = {a.arm: a for a in result.arms}
    assert arms["auto"].accuracy is None
    gate = arms["fp8"].accuracy
    assert gate is not None and gate.status == "pass" and gate.risks == ["kv_cache_dtype fp8"]
    assert "Accuracy gate (consistency check against the baseline arm, not a benchmark score): fp8 pass" in (
        result.summary
    )
    plain, target, _ = await _run(tmp_path / "plain", {"auto": {}, "wide": {"max_num_batched_tokens": 8192}}, 1)
    assert target.asked == [] and all(a.accuracy is None for a in plain.arms) and "Accuracy gate" not in plain.summary
