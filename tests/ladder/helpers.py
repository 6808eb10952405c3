"""Builders for the ladder tests: real H200 logs, the same logs retargeted, and rungs made from them."""

import json
import re
from pathlib import Path

from redline.engines.vllm import parse_boot_log
from redline.ledger import append_rung, set_smoke_test
from redline.models.ladder import Floor, Ladder, ModelRef, Rung, SmokeTest
from redline.policy import place_boot
from redline.policy.drift import kv_drift
from tests.conftest import H200, h200_log

QWEN = "/models/qwen32b"
LLAMA = "/models/llama8b"


def retarget(text: str, mml: int, mnbt: int | None = None, kv_tokens: int | None = None) -> str:
    """A real boot log with its max_model_len (and batched tokens, KV size) changed: a log of a boot not captured."""
    text = re.sub(r"'max_model_len': \d+", f"'max_model_len': {mml}", text)
    text = re.sub(r"Using max model len \d+", f"Using max model len {mml}", text)
    if mnbt is not None:
        text = re.sub(r"max_num_batched_tokens(': |=)\d+", rf"max_num_batched_tokens\g<1>{mnbt}", text)
    tokens = (
        kv_tokens
        if kv_tokens is not None
        else int(re.search(r"KV cache size: ([\d,]+)", text).group(1).replace(",", ""))
    )
    text = re.sub(r"KV cache size: [\d,]+ tokens", f"KV cache size: {tokens:,} tokens", text)
    return re.sub(
        r"Maximum concurrency for [\d,]+ tokens per request: [\d.]+x",
        f"Maximum concurrency for {mml:,} tokens per request: {tokens / mml:.2f}x",
        text,
    )


def q32_boot(mml: int, kv_tokens: int = 256_848) -> str:
    """qwen32b booting at `mml`, from the real 131,072 boot (KV tokens do not depend on max_model_len)."""
    return retarget(h200_log("q32_128k.log"), mml, kv_tokens=kv_tokens)


def q32_oom(mml: int, estimate: int) -> str:
    """qwen32b failing at `mml` as the real 262,144 boot failed, saying `estimate` fits."""
    text = h200_log("q32_256k.log").replace("262144", str(mml))
    return text.replace("estimated maximum model length is 256848", f"estimated maximum model length is {estimate}")


def crash_env_log(mml: int, mnbt: int = 8192, model: str = QWEN) -> str:
    """A boot that fails on a mistyped vLLM environment variable (vllm/envs.py's warning, then the engine dies)."""
    return (
        "(APIServer pid=100) INFO 11-30 10:00:00 [api_utils.py:345]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.26.0\n"
        f"(APIServer pid=100) INFO 11-30 10:00:00 [api_utils.py:273] non-default args: {{'model_tag': '{model}', "
        f"'model': '{model}', 'max_model_len': {mml}, 'gpu_memory_utilization': 0.9, 'max_num_batched_tokens': {mnbt}}}\n"
        "(APIServer pid=100) WARNING 11-30 10:00:01 [envs.py:2027] Unknown vLLM environment variable detected: VLLM_ATENTION_BACKEND\n"
        "(APIServer pid=100) Traceback (most recent call last):\n"
        "(APIServer pid=100) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    )


def bench_json(model: str, mml: int, *, concurrency: int = 1, failed: int = 0, output_len: int = 128) -> str:
    """The real bench result, rewritten to a near-max-length smoke test of `mml`."""
    data = json.loads((H200 / "bench_l8b_c16.json").read_text())
    prompts = 2 * concurrency
    input_len = mml - output_len - max(64, mml // 100)
    data.update(
        model_id=model,
        tokenizer_id=model,
        num_prompts=prompts,
        max_concurrency=concurrency,
        completed=prompts - failed,
        failed=failed,
        total_input_tokens=input_len * (prompts - failed),
        total_output_tokens=output_len * (prompts - failed),
    )
    return json.dumps(data)


def ladder(path: str = QWEN, floor: tuple[int, int] = (32768, 8192), mpe: int | None = None, **fields) -> Ladder:
    """A ladder for qwen32b (positions 1,048,576) or llama8b (131,072), as their config.json say."""
    mpe = mpe or (131_072 if path == LLAMA else 1_048_576)
    fields.setdefault("model", ModelRef(key=Path(path).name, path=path, max_position_embeddings=mpe))
    return Ladder(floor=Floor(max_model_len=floor[0], max_num_batched_tokens=floor[1]), **fields)


def boot(state: Ladder, log_text: str, *, replay_of: int | None = None) -> Ladder:
    """`state` with the rung `log_text` shows appended where place_boot puts it (as rung_record does, without files)."""
    signals = parse_boot_log(log_text)
    place = place_boot(state, signals.max_model_len, signals.max_num_batched_tokens)
    rung = Rung(
        index=len(state.rungs) + 1,
        climbs=place.climbs,
        replay_of=replay_of or place.replay_of,
        status=signals.status,
        reason=signals.reason,
        serve=place.serve,
        signals=signals,
        predicted=place.predicted,
        drift=kv_drift(place.predicted, signals),
    )
    return append_rung(state, rung)


def smoke(state: Ladder, outcome: str = "pass") -> Ladder:
    return set_smoke_test(state, SmokeTest(attempted=True, outcome=outcome, reason=f"test: {outcome}"))


def force(state: Ladder, log_text: str, climbs: str = "max_model_len", replay_of: int | None = None) -> Ladder:
    """`state` with a rung appended whatever the route says: to set up a history to route from."""
    from redline.policy import serve_config

    signals = parse_boot_log(log_text)
    serve = serve_config(state, signals.max_model_len, signals.max_num_batched_tokens)
    rung = Rung(
        index=len(state.rungs) + 1,
        climbs=climbs,
        replay_of=replay_of,
        status=signals.status,
        reason=signals.reason,
        serve=serve,
        signals=signals,
    )
    return append_rung(state, rung)
