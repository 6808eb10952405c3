"""The SGLang ladder redline climbed for real on an H200 (tests/data/sglang-0.5.17-h200-ladder) read back: each rung
re-parses to what it recorded, each smoke test is its own bench file, the ceiling is rung 4's and nothing more is
asked; and the real boot whose pool was smaller than its context routes the climb to the pool's tokens."""

from pathlib import Path

from redline.engines import get_engine
from redline.ledger import read_ladder
from redline.ops.ladder.plan import ladder_init, ladder_next, rung_record
from redline.ops.requests import LadderInitRequest
from redline.policy import next_step

DATA = Path(__file__).resolve().parent.parent / "data"
LADDER = DATA / "sglang-0.5.17-h200-ladder" / "llama8b"
SGLANG = get_engine("sglang")


def test_the_real_sglang_ladder_reads_back_with_its_smoke_tested_ceiling() -> None:
    ladder = read_ladder(LADDER / "ladder.yml")
    assert ladder.engine == "sglang" and ladder.gpu.name == "NVIDIA H200"
    ceiling = ladder.ceiling
    assert (ceiling.max_model_len, ceiling.max_num_batched_tokens, ceiling.proven_by) == (131_072, 32_768, [4])
    assert ceiling.serve_command.startswith("python3 -m sglang.launch_server --model-path /models/llama8b")
    assert "--context-length 131072 --chunked-prefill-size 32768 --mem-fraction-static 0.9" in ceiling.serve_command
    assert [(r.serve.max_model_len, r.serve.max_num_batched_tokens) for r in ladder.rungs] == [
        (32_768, 8192),
        (131_072, 8192),
        (131_072, 16_384),
        (131_072, 32_768),
    ]
    assert [r.smoke_test.attempted for r in ladder.rungs] == [False, True, True, True]  # every rung above the floor
    assert next_step(ladder).route == "done"


def test_each_rung_is_what_its_own_log_and_bench_file_say() -> None:
    for rung in read_ladder(LADDER / "ladder.yml").rungs:
        signals = SGLANG.parse_boot_log((LADDER / rung.log_file).read_text())
        # the reader has learnt figures since the climb (the memory budget): what was recorded, it still reads alike
        recorded = rung.signals.model_dump(exclude={"warnings"}, exclude_none=True)
        now = signals.model_dump(exclude={"warnings"}, exclude_none=True)
        assert {k: now[k] for k in recorded if k != "memory"} == {k: v for k, v in recorded.items() if k != "memory"}
        assert recorded.get("memory", {}).items() <= now.get("memory", {}).items()
        if rung.smoke_test.attempted:
            figures = SGLANG.parse_bench_result((LADDER / rung.smoke_test.result_file).read_text())
            recorded = rung.smoke_test.figures  # the figures read when it ran; fields added since are left unset
            kept = recorded.model_fields_set
            assert figures.model_dump(include=kept) == recorded.model_dump(include=kept) and figures.all_completed
            assert figures.backend == "openai" and figures.total_input_tokens == 2 * 130_813


def test_a_real_boot_above_its_pool_routes_the_climb_to_what_the_pool_holds(tmp_path: Path) -> None:
    path = tmp_path / "llama8b-sglang.yml"
    ladder_init(
        path,
        LadderInitRequest(
            model="llama8b",
            model_path="/models/llama8b",
            engine="sglang",
            floor_max_model_len=131_072,
            floor_max_num_batched_tokens=8192,
            gpu_memory_utilization=0.2,
            max_position_embeddings=131_072,
            fixed={"enforce_eager": True, "load_format": "dummy"},
        ),
    )
    rung = rung_record(path, (DATA / "sglang-0.5.17-h200" / "pool-smaller-than-context.log").read_text())
    assert (rung.status.value, rung.signals.kv_cache_tokens) == ("boot_ok", 104_438)
    step = ladder_next(path)
    assert step.route == "run_rung"
    assert step.rung.max_model_len == 104_432  # the pool's tokens, down to a 16-token block
    assert f"--context-length {step.rung.max_model_len}" in step.command
