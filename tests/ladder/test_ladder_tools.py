"""The ladder operations on files: init, record a boot or a smoke test, next, status, the ceiling."""

import json
import shlex
from pathlib import Path

import pytest
from pydantic import ValidationError

from redline.engines import get_engine
from redline.errors import InputError, LadderError, RedlineError
from redline.ledger import read_ladder
from redline.models import BootSignals, BootStatus
from redline.ops.ladder.plan import (
    ceiling_record,
    ladder_init,
    ladder_next,
    ladder_status,
    rung_record,
    smoke_record,
)
from redline.ops.requests import LadderInitRequest
from redline.policy import serve_config
from tests.conftest import H200, h200_log
from tests.ladder.helpers import LLAMA, QWEN, bench_json, q32_boot

MODELS = H200 / "models"


def _qwen(tmp_path: Path, floor: int = 131072, **options) -> Path:
    path = tmp_path / "qwen32b.yml"
    ladder_init(
        path,
        LadderInitRequest(
            model="qwen32b",
            model_path=QWEN,
            floor_max_model_len=floor,
            floor_max_num_batched_tokens=8192,
            max_position_embeddings=1_048_576,
            gpu_name="NVIDIA H200",
            gpu_memory_gib=139.8,
            engine_version="0.26.0",
            **options,
        ),
    )
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(tmp_path: Path, error: type[RedlineError], call, match: str) -> None:
    """`call` raises `error` and leaves every file under tmp_path as it was."""
    before = _snapshot(tmp_path)
    with pytest.raises(error, match=match):
        call()
    assert _snapshot(tmp_path) == before


# -- init ---------------------------------------------------------------------------------------------


def test_init_reads_max_position_embeddings_from_a_local_config_json(tmp_path):
    ladder = ladder_init(
        tmp_path / "l.yml",
        LadderInitRequest(
            model="llama8b",
            model_path=str(MODELS / "llama8b"),
            floor_max_model_len=32768,
            floor_max_num_batched_tokens=8192,
        ),
    )
    assert ladder.model.max_position_embeddings == 131_072


def test_init_refuses_a_floor_above_max_position_embeddings(tmp_path):
    with pytest.raises(InputError, match="over the model's max_position_embeddings"):
        ladder_init(
            tmp_path / "l.yml",
            LadderInitRequest(
                model="llama8b",
                model_path=str(MODELS / "llama8b"),
                floor_max_model_len=262144,
                floor_max_num_batched_tokens=8192,
            ),
        )
    assert not (tmp_path / "l.yml").exists()


def test_init_with_long_context_sets_the_env_var_vllm_needs(tmp_path):
    ladder = ladder_init(
        tmp_path / "l.yml",
        LadderInitRequest(
            model="llama8b",
            model_path=str(MODELS / "llama8b"),
            floor_max_model_len=262144,
            floor_max_num_batched_tokens=8192,
            allow_long_context=True,
        ),
    )
    assert ladder.fixed.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}


def test_init_refuses_an_existing_ladder_and_changes_nothing(tmp_path):
    _qwen(tmp_path)
    _refused(tmp_path, LadderError, lambda: _qwen(tmp_path, floor=32768), "already there")


def test_init_refuses_a_bad_value_in_one_line(tmp_path):
    # the request is checked as it is made, before any file is touched
    with pytest.raises(ValidationError, match="gpu_memory_utilization"):
        ladder_init(
            tmp_path / "l.yml",
            LadderInitRequest(
                model="q",
                model_path=QWEN,
                floor_max_model_len=32768,
                floor_max_num_batched_tokens=8192,
                gpu_memory_utilization=1.5,
            ),
        )
    assert list(tmp_path.iterdir()) == []


# -- the sequence, through the files ----------------------------------------------------------


def test_real_qwen32b_climb_from_131072_to_the_recorded_ceiling(tmp_path):
    path = _qwen(tmp_path)
    rung = rung_record(path, h200_log("q32_128k.log"), log_name="q32_128k.log")
    assert rung.index == 1 and rung.climbs == "floor" and rung.status is BootStatus.BOOT_OK
    assert rung.log_file == "qwen32b.runs/rung-001/boot.log"
    assert (tmp_path / rung.log_file).read_text() == h200_log("q32_128k.log")
    assert rung.boot_s == 97.0  # 09:32:36 to "Starting vLLM server" at 09:34:13

    step = ladder_next(path)
    assert step.route == "run_rung" and 0.99 * 256_848 <= step.rung.max_model_len <= 256_848
    assert shlex.split(step.command)[:3] == ["vllm", "serve", QWEN] and "256848" in step.command

    rung_record(path, q32_boot(step.rung.max_model_len), simulated=True)
    step = ladder_next(path)
    assert step.route == "smoke_test" and "bench serve" in step.command and "rung-002" in step.command

    tested = smoke_record(path, bench_json(QWEN, 256_848))
    assert tested.smoke_test.outcome == "pass" and tested.smoke_test.result_file == "qwen32b.runs/rung-002/smoke.json"
    assert ladder_next(path).route == "record_ceiling"

    ceiling = ceiling_record(path)
    assert (ceiling.max_model_len, ceiling.max_num_batched_tokens, ceiling.proven_by) == (256_848, 8192, [2])
    assert (
        shlex.split(ceiling.serve_command)[shlex.split(ceiling.serve_command).index("--max-model-len") + 1] == "256848"
    )
    assert ceiling.headroom == (
        "raising gpu_memory_utilization from 0.9 to 0.95 would add about 6.99 GiB ≈ 28,629 KV tokens"
    )
    assert ladder_next(path).route == "done"
    assert "simulated: true" in path.read_text()
    # asked again once done: nothing to record, never "the climb is not over: the next step is done" (issue 40)
    with pytest.raises(LadderError, match=r"^nothing to record: the climb is done \("):
        ceiling_record(path)


def test_status_lists_the_rungs_and_the_next_step(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    status = ladder_status(path)
    assert [(r.index, r.max_model_len, r.kv_cache_tokens, r.smoke) for r in status.rows] == [
        (1, 131_072, 256_848, None)
    ]
    assert status.next.route == "run_rung" and status.next.rung.max_model_len == 256_848


# -- refusals change nothing on disk ------------------------------------------------------------------


def test_a_log_of_another_model_is_refused(tmp_path):
    path = _qwen(tmp_path)
    _refused(
        tmp_path,
        LadderError,
        lambda: rung_record(path, h200_log("l8b_32k.log")),
        "served '/models/llama8b', but this ladder climbs qwen32b",
    )


def test_a_log_out_of_order_is_refused_naming_both_configs(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    _refused(
        tmp_path,
        LadderError,
        lambda: rung_record(path, h200_log("q32_256k.log")),
        r"booted max_model_len 262,144.*expects rung 2 at max_model_len 256,848",
    )


def test_a_log_at_another_gpu_memory_utilization_is_refused(tmp_path):
    path = _qwen(tmp_path)
    log = h200_log("q32_128k.log").replace("(0.9, 125.82 GiB)", "(0.95, 132.81 GiB)")
    _refused(tmp_path, LadderError, lambda: rung_record(path, log), "gpu_memory_utilization 0.95")


def test_a_log_of_another_engine_version_is_refused(tmp_path):
    path = _qwen(tmp_path)
    log = h200_log("q32_128k.log").replace("0.26.0", "0.27.1")
    _refused(tmp_path, LadderError, lambda: rung_record(path, log), "vLLM 0.27.1")


def test_a_missing_ladder_is_refused_without_creating_anything(tmp_path):
    _refused(
        tmp_path, LadderError, lambda: rung_record(tmp_path / "none.yml", h200_log("q32_128k.log")), "no such file"
    )


def test_a_text_that_is_not_a_boot_log_is_refused(tmp_path):
    path = _qwen(tmp_path)
    _refused(tmp_path, RedlineError, lambda: rung_record(path, "hello\n"), "not a vLLM boot log")


def test_a_pass_that_did_not_load_the_rung_near_its_max_length_is_refused(tmp_path):
    path = _qwen(tmp_path, floor=131072)
    rung_record(path, h200_log("q32_128k.log"))
    short = json.loads(bench_json(QWEN, 131_072))
    short.update(total_input_tokens=1024 * short["completed"])
    _refused(tmp_path, InputError, lambda: smoke_record(path, json.dumps(short)), "at least 117,964 tokens")


def test_a_bench_against_another_model_is_refused(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    _refused(tmp_path, LadderError, lambda: smoke_record(path, bench_json(LLAMA, 131_072)), "/models/llama8b")


def test_a_second_smoke_test_of_the_same_rung_is_refused(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    smoke_record(path, bench_json(QWEN, 131_072))
    _refused(tmp_path, LadderError, lambda: smoke_record(path, bench_json(QWEN, 131_072)), "already has its smoke test")


def test_the_ceiling_is_refused_while_the_climb_goes_on(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    _refused(tmp_path, LadderError, lambda: ceiling_record(path), "the climb is not over: the next step is run_rung")


# -- what gets recorded -------------------------------------------------------------------------------


def test_failed_requests_record_a_failed_smoke_test(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    rung = smoke_record(path, bench_json(QWEN, 131_072, failed=1))
    assert rung.smoke_test.outcome == "fail" and "1 of 2 requests failed" in rung.smoke_test.reason


def test_a_bench_that_wrote_nothing_records_a_failed_smoke_test(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    rung = smoke_record(path, None, log_lines=["bench exited 1"])
    assert rung.smoke_test.outcome == "fail" and rung.smoke_test.log_lines == ["bench exited 1"]


def test_an_unhealthy_server_after_the_bench_fails_the_smoke_test(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    assert smoke_record(path, bench_json(QWEN, 131_072), server_healthy_after=False).smoke_test.outcome == "fail"


def test_a_past_config_is_recorded_as_a_replay(tmp_path):
    path = _qwen(tmp_path)
    rung_record(path, h200_log("q32_128k.log"))
    rung = rung_record(path, h200_log("q32_128k.log"))
    assert (rung.index, rung.replay_of, rung.climbs) == (2, 1, "floor")
    assert (tmp_path / "qwen32b.runs/rung-002/boot.log").exists()


def test_a_runner_can_record_a_boot_that_died_before_vllm_said_anything(tmp_path):
    path = _qwen(tmp_path)
    ladder = ladder_next(path)
    signals = BootSignals(status=BootStatus.CRASH_ENV, reason="vllm: command not found")
    rung = rung_record(path, "bash: vllm: command not found\n", signals=signals, serve=ladder.rung)
    assert rung.status is BootStatus.CRASH_ENV and ladder_next(path).route == "diagnose"


def test_a_runner_config_that_differs_from_the_expected_rung_is_refused(tmp_path):
    path = _qwen(tmp_path)
    other = serve_config(read_ladder(path), 131_072, 8192).model_copy(update={"enforce_eager": True})
    signals = BootSignals(status=BootStatus.CRASH_ENV, reason="x")
    _refused(tmp_path, LadderError, lambda: rung_record(path, "x\n", signals=signals, serve=other), "fixed knob")


def test_boot_seconds_come_from_the_log_timestamps():
    log_boot_seconds = get_engine("vllm").boot_seconds
    assert log_boot_seconds(h200_log("q32_128k.log")) == 97.0
    assert log_boot_seconds(h200_log("q32_256k.log")) == 54.0  # a failure: to its last line
    assert log_boot_seconds("no times here") is None


def test_the_first_boot_fills_an_unknown_engine_version_once(tmp_path):
    path = tmp_path / "ladder.yml"
    ladder_init(
        path,
        LadderInitRequest(
            model="qwen32b", model_path="/models/qwen32b", floor_max_model_len=131072, floor_max_num_batched_tokens=8192
        ),
    )
    assert read_ladder(path).engine_version is None
    rung_record(path, h200_log("q32_128k.log"))
    assert read_ladder(path).engine_version == "0.26.0"
