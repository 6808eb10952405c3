"""The ladders redline climbed for real on an H200 (tests/data/vllm-0.26.0-h200-ladder) read back,
re-parse to what they recorded, and need nothing more."""

from pathlib import Path

import pytest

from redline.engines.vllm import parse_bench_result, parse_boot_log
from redline.ledger import read_ladder
from redline.policy import next_step

DATA = Path(__file__).parent.parent / "data" / "vllm-0.26.0-h200-ladder"
CEILINGS = {"qwen32b": (256_848, 8192, 2), "llama8b": (131_072, 131_072, 4)}


@pytest.mark.parametrize("key", sorted(CEILINGS))
def test_real_ladder_reads_back_with_its_ceiling(key):
    ladder = read_ladder(DATA / key / "ladder.yml")
    mml, mnbt, boots = CEILINGS[key]
    assert (ladder.ceiling.max_model_len, ladder.ceiling.max_num_batched_tokens) == (mml, mnbt)
    assert len(ladder.rungs) == boots and not any(r.simulated for r in ladder.rungs)
    assert ladder.gpu.name == "NVIDIA H200"
    assert next_step(ladder).route == "done"


@pytest.mark.parametrize("key", sorted(CEILINGS))
def test_each_rung_is_what_its_own_log_says(key):
    folder = DATA / key
    for rung in read_ladder(folder / "ladder.yml").rungs:
        signals = parse_boot_log((folder / rung.log_file).read_bytes().decode())  # lone \r kept as in the file
        kept = rung.signals.model_fields_set - {"warnings"}  # what the climb recorded; fields added since are unset
        assert signals.model_dump(include=kept) == rung.signals.model_dump(include=kept)
        assert (signals.max_model_len, signals.max_num_batched_tokens) == (
            rung.serve.max_model_len,
            rung.serve.max_num_batched_tokens,
        )
        if rung.smoke_test.attempted:
            figures = parse_bench_result((folder / rung.smoke_test.result_file).read_text())
            recorded = rung.smoke_test.figures  # the figures read when it ran; fields added since are left unset
            kept = recorded.model_fields_set
            assert figures.model_dump(include=kept) == recorded.model_dump(include=kept) and figures.all_completed


def test_qwen32b_reached_the_ceiling_its_first_boot_predicted():
    first, second = read_ladder(DATA / "qwen32b" / "ladder.yml").rungs
    assert first.signals.kv_cache_tokens == second.serve.max_model_len == 256_848
    assert second.signals.max_concurrency == 1.0 and second.smoke_test.passed
