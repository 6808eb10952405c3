"""The SGLang boot-log reader on excerpts written from SGLang 0.5.17's own texts (tests/engines/sglang_excerpts.py
names the file and line of each), until real H200 logs are fixtures in tests/data/sglang-0.5.17-h200/."""

import pytest

from redline.engines import get_engine
from redline.errors import LogParseError
from redline.models import BootStatus
from tests.engines import sglang_excerpts as x

SGLANG = get_engine("sglang")


def main_failure(exception: str) -> str:
    """The launcher's own uncaught error: Python prints the traceback raw."""
    return (
        x.head() + "Traceback (most recent call last):\n"
        '  File "/opt/sglang/sglang/launch_server.py", line 74, in <module>\n'
        "    run_server(server_args)\n" + exception + "\n"
    )


# ---- a good boot: every figure the log gives --------------------------------------------------------------


def test_a_good_boot_gives_its_pool_its_knobs_its_weights_and_its_ready_line():
    s = SGLANG.parse_boot_log(x.good_boot())
    assert (s.engine, s.status) == ("sglang", BootStatus.BOOT_OK)
    assert "The server is fired up and ready to roll!" in s.reason
    assert (s.max_model_len, s.max_num_batched_tokens) == (32768, 8192)
    assert s.kv_cache_tokens == 242_360  # the scheduler's max_total_num_tokens
    assert s.available_kv_cache_gib == 59.18  # K + V of the pool
    assert (s.memory.weights_gib, s.timings.model_load_s, s.memory.cudagraph_gib) == (61.06, 56.12, 0.62)
    assert s.max_concurrency is None and s.estimated_max_model_len is None  # SGLang prints neither
    assert s.engine_version is None  # its serve log prints no version


def test_a_boot_at_a_context_its_pool_cannot_hold_still_boots_and_says_the_pool():
    s = SGLANG.parse_boot_log(x.good_boot(context=524_288, tokens=242_360))
    assert s.status is BootStatus.BOOT_OK
    assert (s.max_model_len, s.kv_cache_tokens) == (524_288, 242_360)


def test_the_pool_line_with_and_without_dtype_and_in_its_mla_form():
    for line in (x.kv_line(1000, 1.0, 2.0), x.kv_line(1000, 1.0, 2.0, dtype=False)):
        s = SGLANG.parse_boot_log(x.head() + line)
        assert (s.kv_cache_tokens, s.available_kv_cache_gib) == (1000, 3.0)
    s = SGLANG.parse_boot_log(x.head() + x.mla_line(5000, 4.5))
    assert (s.kv_cache_tokens, s.available_kv_cache_gib) == (5000, 4.5)


def test_a_hybrid_pool_counts_full_attention_tokens_and_every_pool_s_memory():
    text = (
        x.head() + x.kv_line(80_000, 2.0, 2.0, name="Full KV Cache") + x.kv_line(20_000, 1.0, 1.0, name="SWA KV Cache")
    )
    s = SGLANG.parse_boot_log(text)
    assert (s.kv_cache_tokens, s.available_kv_cache_gib) == (80_000, 6.0)


def test_the_scheduler_line_wins_over_the_pool_line_and_each_rank_counts_once():
    text = (
        x.head()
        + x.kv_line(242_368, 29.59, 29.59)
        + x.kv_line(242_368, 29.59, 29.59)  # TP0 and TP1
        + x.scheduler(242_360)
        + x.serving()
    )
    s = SGLANG.parse_boot_log(text)
    assert (s.kv_cache_tokens, s.available_kv_cache_gib) == (242_360, 59.18)


def test_knobs_come_from_the_server_args_even_when_the_boot_fails_before_the_scheduler_line():
    s = SGLANG.parse_boot_log(x.scheduler_failure(x.NOT_ENOUGH, context=65536, chunk=4096))
    assert (s.max_model_len, s.max_num_batched_tokens, s.kv_cache_tokens) == (65536, 4096, None)


def test_chunked_prefill_off_gives_no_batched_token_figure():
    s = SGLANG.parse_boot_log(x.head(chunk=-1))
    assert s.max_num_batched_tokens is None


def test_the_served_model_and_the_boot_seconds():
    text = x.good_boot(model="/models/it's here")
    assert SGLANG.served_model(text) == "/models/it's here"  # repr() quotes it with double quotes
    assert SGLANG.served_model(x.good_boot()) == x.MODEL
    assert SGLANG.boot_seconds(x.good_boot()) == 95.0  # first stamp to the ready line
    assert SGLANG.served_model("[2026-11-30 10:00:00] sglang, and no server args\n") is None


def test_a_version_is_read_when_the_run_printed_sglang_version_first():
    s = SGLANG.parse_boot_log("sglang version: 0.5.17\ngit revision: 1a2b3c4\n" + x.good_boot())
    assert s.engine_version == "0.5.17"


def test_warnings_are_kept_the_profiled_cap_and_an_allowed_longer_context():
    s = SGLANG.parse_boot_log(x.head() + x.CONTEXT_WARNED + x.PROFILED + x.kv_line(9, 1, 1) + x.serving())
    assert s.status is BootStatus.BOOT_OK
    assert any("is greater than the derived context_length" in w for w in s.warnings)
    assert any("larger than the profiled value" in w for w in s.warnings)


def test_a_deprecated_flag_warning_is_read_without_its_colour_codes():
    # srt/arg_groups/argparse_actions.py: print_deprecated_warning wraps the text in \033[1;33m ... \033[0m
    line = (
        "[2026-11-30 10:00:00] \x1b[1;33m'--disable-cuda-graph' is deprecated and will be removed in a future "
        "release. Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.\x1b[0m\n"
    )
    s = SGLANG.parse_boot_log(line + x.good_boot())
    assert s.warnings[0].startswith("'--disable-cuda-graph' is deprecated")


# ---- failures: which text decides which status ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "status", "quoted"),
    [
        (x.scheduler_failure(x.NOT_ENOUGH), BootStatus.OOM_KV_CACHE, "Not enough memory. Please try to increase"),
        (x.scheduler_failure(x.NO_KV_MEMORY), BootStatus.OOM_KV_CACHE, "leave no GPU memory for the KV cache"),
        (x.scheduler_failure(x.GRAPH_OOM), BootStatus.OOM_CUDA, "Capture cuda graph failed: CUDA out of memory"),
        (x.scheduler_failure(x.CONTEXT_REFUSED), BootStatus.CRASH_CONFIG, "is greater than the derived context_length"),
        (main_failure(x.DIED), BootStatus.CRASH_UNKNOWN, "scheduler died during initialization (exit code: -9)"),
        (x.scheduler_failure(x.UNKNOWN) + x.INIT_FAILED + "\n", BootStatus.CRASH_UNKNOWN, "AssertionError: attention"),
        (main_failure(x.NO_KERNEL), BootStatus.CRASH_IMPORT, "sglang-kernel with minimum required version"),
        (main_failure(x.IMPORT), BootStatus.CRASH_IMPORT, "undefined symbol"),
        (x.LAUNCH_WARNING + x.BAD_FLAG, BootStatus.CRASH_CONFIG, "error: unrecognized arguments: --max-model-len"),
    ],
)
def test_each_failure_text_decides_its_status_and_the_reason_quotes_it(text, status, quoted):
    s = SGLANG.parse_boot_log(text)
    assert s.status is status
    assert quoted in s.reason


def test_a_scheduler_header_alone_is_crash_unknown_with_the_header_as_reason():
    text = x.head() + f"{x.stamp(71)}Received sigquit from a child process. It usually means the child failed.\n"
    s = SGLANG.parse_boot_log(text)
    assert s.status is BootStatus.CRASH_UNKNOWN and "Received sigquit" in s.reason


def test_a_log_that_stops_early_is_incomplete_and_says_where():
    s = SGLANG.parse_boot_log(x.head())
    assert s.status is BootStatus.BOOT_INCOMPLETE and "line 8" in s.reason


def test_a_log_that_is_not_sglang_is_refused():
    with pytest.raises(LogParseError, match="not an SGLang boot log"):
        SGLANG.parse_boot_log(
            "(APIServer pid=1) INFO 11-30 09:30:00 [api_server.py:1] vLLM API server version 0.26.0\n"
        )


def test_log_message_strips_the_time_and_rank_tag():
    assert (
        SGLANG.log_message("[2026-11-30 10:00:01 DP0 TP3] Load weight begin. avail mem=1.00 GB")
        == "Load weight begin. avail mem=1.00 GB"
    )
    assert SGLANG.log_message("[2026-11-30 10:00:01.123] Memory pool end.") == "Memory pool end."


def test_a_start_that_failed_on_its_socket_path_s_length_is_crash_env_naming_the_fix():
    """Issue 38, item 10: SGLang binds its ZeroMQ sockets in its temporary folder too; pyzmq 27.3.0's own words."""
    zmq = "zmq.error.ZMQError: ipc path \"/home/ci/redline-work/experiments/llama-8b-instruct-long-context-ceiling/target/tmp/5f0e6b8e-0c2b-4d8e-9d6a-2c1e3f4a5b6c\" is longer than 107 characters (sizeof(sockaddr_un.sun_path)). zmq.IPC_PATH_MAX_LEN constant can be used to check addr length (if it is defined). (addr='ipc:///home/ci/redline-work/experiments/llama-8b-instruct-long-context-ceiling/target/tmp/5f0e6b8e-0c2b-4d8e-9d6a-2c1e3f4a5b6c')"
    s = SGLANG.parse_boot_log(main_failure(zmq))
    assert s.status is BootStatus.CRASH_ENV, s.reason
    assert "is longer than 107 characters, a Unix socket's limit" in s.reason
    assert "set TMPDIR in the target's env to a folder of at most 70 characters" in s.reason
