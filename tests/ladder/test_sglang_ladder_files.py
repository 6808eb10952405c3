"""An SGLang ladder through the file operations a person or the MCP tools use: init, next, record a boot,
record a smoke test from vLLM's bench client, record the ceiling. The boot logs are the excerpts of
tests/engines/sglang_excerpts.py until real H200 logs are fixtures."""

import json
import shlex

import pytest

from redline.errors import LadderError
from redline.ledger import read_ladder
from redline.ops.ladder.plan import ceiling_record, ladder_init, ladder_next, ladder_status, rung_record, smoke_record
from redline.ops.requests import LadderInitRequest
from tests.conftest import H200
from tests.engines import sglang_excerpts as x

POOL, CANDIDATE = 242_360, 242_352


def _init(tmp_path, **options):
    path = tmp_path / "qwen32b-sglang.yml"
    ladder_init(
        path,
        LadderInitRequest(
            model="qwen32b",
            model_path=x.MODEL,
            engine="sglang",
            floor_max_model_len=32768,
            floor_max_num_batched_tokens=8192,
            max_position_embeddings=1_048_576,
            max_num_batched_tokens_cap=8192,
            **options,
        ),
    )
    return path


def _bench(mml: int) -> str:
    """vLLM's real bench result, as its client writes it with --backend openai, rewritten to a near-max smoke test."""
    data = json.loads((H200 / "bench_l8b_c16.json").read_text())
    input_len = mml - 128 - mml // 1000
    data.update(
        backend="openai",
        model_id=x.MODEL,
        tokenizer_id=x.MODEL,
        num_prompts=2,
        max_concurrency=1,
        completed=2,
        failed=0,
        total_input_tokens=2 * input_len,
        total_output_tokens=2 * 128,
    )
    return json.dumps(data)


def test_an_sglang_ladder_climbs_to_its_pool_and_records_the_ceiling_after_its_smoke_test(tmp_path):
    path = _init(tmp_path)
    first = ladder_next(path)
    assert shlex.split(first.command)[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", x.MODEL]
    assert "--context-length 32768 --chunked-prefill-size 8192 --mem-fraction-static 0.9" in first.command

    rung = rung_record(path, x.good_boot(32768, 8192, POOL))
    assert (rung.signals.engine, rung.signals.kv_cache_tokens) == ("sglang", POOL)
    step = ladder_next(path)
    assert (step.route, step.rung.max_model_len) == ("run_rung", CANDIDATE)
    assert f"--context-length {CANDIDATE}" in step.command

    rung_record(path, x.good_boot(CANDIDATE, 8192, POOL))
    step = ladder_next(path)
    assert step.route == "smoke_test"
    bench = shlex.split(step.command)
    assert bench[:3] == ["vllm", "bench", "serve"] and bench[bench.index("--backend") + 1] == "openai"
    assert bench[bench.index("--tokenizer") + 1] == x.MODEL
    with pytest.raises(LadderError):
        ceiling_record(path)  # not before the smoke test

    tested = smoke_record(path, _bench(CANDIDATE))
    assert tested.smoke_test.passed and tested.smoke_test.context.bench.backend == "openai"
    assert ladder_next(path).route == "record_ceiling"
    ceiling = ceiling_record(path)
    assert (ceiling.max_model_len, ceiling.max_num_batched_tokens, ceiling.proven_by) == (CANDIDATE, 8192, [2])
    assert ceiling.serve_command.startswith("python3 -m sglang.launch_server --model-path")
    assert read_ladder(path).engine == "sglang"
    assert [r.kv_cache_tokens for r in ladder_status(path).rows] == [POOL, POOL]


def test_a_vllm_log_is_refused_by_an_sglang_ladder(tmp_path):
    from tests.conftest import h200_log

    path = _init(tmp_path)
    with pytest.raises(Exception, match="not an SGLang boot log"):
        rung_record(path, h200_log("q32_128k.log"))


def test_an_sglang_ladder_refuses_a_vllm_only_knob_at_init(tmp_path):
    with pytest.raises(Exception, match="cudagraph_mode"):
        _init(tmp_path, fixed={"cudagraph_mode": "FULL"})
    assert not (tmp_path / "qwen32b-sglang.yml").exists()


def test_allow_long_context_sets_sglang_s_switch(tmp_path):
    path = _init(tmp_path, allow_long_context=True)
    assert read_ladder(path).fixed.env == {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
