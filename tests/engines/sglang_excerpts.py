"""SGLang 0.5.17 boot-log excerpts, written line by line from the f-strings in its wheel (file:line beside each),
checked against the real H200 logs in tests/data/sglang-0.5.17-h200/ (test_sglang_h200_logs.py).

Every logger line carries the prefix of srt/utils/common.py:2173 (`[%(asctime)s{prefix}] %(message)s`, prefix
" TP0" and the like only in scheduler processes with tp_size > 1); tracebacks and argparse errors are raw.
"""

MODEL = "/models/qwen32b"


def stamp(second: int, rank: str = "") -> str:
    return f"[2026-11-30 10:{second // 60:02d}:{second % 60:02d}{rank}] "


# sglang/launch_server.py:57, the UserWarning of `python -m sglang.launch_server`, printed raw by warnings
LAUNCH_WARNING = (
    "/opt/sglang/sglang/launch_server.py:57: UserWarning: 'python -m sglang.launch_server' is still supported, "
    "but 'sglang serve' is the recommended entrypoint.\n"
    "  Example: sglang serve --model-path <model> [options]\n"
    "  warnings.warn(\n"
)


def server_args(model: str = MODEL, context: int | None = 32768, chunk: int | None = 8192, mem: float = 0.9) -> str:
    """srt/entrypoints/engine.py:1059, logger.info(f"{server_args=}"): the dataclass repr, its first 36 fields."""
    return (
        f"{stamp(0)}server_args=ServerArgs(model_path={model!r}, tokenizer_path={model!r}, tokenizer_mode='auto', "
        "tokenizer_backend='huggingface', tokenizer_worker_num=1, detokenizer_worker_num=1, skip_tokenizer_init=False, "
        "load_format='dummy', model_loader_extra_config='{}', trust_remote_code=False, "
        f"context_length={context}, is_embedding=False, enable_multimodal=None, revision=None, model_impl='auto', "
        "model_config_parser='auto', json_model_override_args='{}', dtype='auto', quantization=None, "
        "quantization_param_path=None, kv_cache_dtype='auto', enable_fp32_lm_head=False, modelopt_quant=None, "
        "modelopt_checkpoint_restore_path=None, modelopt_checkpoint_save_path=None, modelopt_export_path=None, "
        f"quantize_and_serve=False, rl_quant_profile=None, enable_tf32_matmul=False, mem_fraction_static={mem}, "
        "max_running_requests=None, max_queued_requests=None, max_total_tokens=None, "
        f"chunked_prefill_size={chunk}, enable_dynamic_chunking=False, max_prefill_tokens=16384, "
        "prefill_max_requests=None, schedule_policy='fcfs')\n"
    )


def head(model: str = MODEL, context: int | None = 32768, chunk: int | None = 8192) -> str:
    return (
        LAUNCH_WARNING
        + server_args(model, context, chunk)
        + f"{stamp(12)}Init torch distributed begin.\n"  # srt/distributed/bootstrap.py:62
        + f"{stamp(13)}Init torch distributed ends. elapsed=0.80 s, mem usage=0.00 GB\n"  # bootstrap.py:127
        + f"{stamp(14)}Load weight begin. avail mem=139.27 GB\n"  # srt/model_executor/model_runner.py:1012
        # srt/model_executor/model_runner.py:1100
        + f"{stamp(70)}Load weight end. elapsed=56.12 s, type=Qwen2ForCausalLM, avail mem=78.21 GB, "
        "mem usage=61.06 GB.\n"
    )


def kv_line(tokens: int, k: float, v: float, dtype: bool = True, name: str = "KV Cache") -> str:
    """srt/mem_cache/memory_pool.py:1670; 0.5.5-0.5.11 print it without `dtype: ...,`."""
    kind = "dtype: torch.bfloat16, " if dtype else ""
    return f"{stamp(71)}{name} is allocated. {kind}#tokens: {tokens}, K size: {k:.2f} GB, V size: {v:.2f} GB\n"


def mla_line(tokens: int, kv: float) -> str:
    """srt/mem_cache/memory_pool.py:1678, the MLA pool: one KV size."""
    return f"{stamp(71)}KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, KV size: {kv:.2f} GB\n"


def pool_end(avail: float = 18.52) -> str:
    return f"{stamp(71)}Memory pool end. avail mem={avail:.2f} GB\n"  # srt/mem_cache/kv_cache_configurator.py:258


def graphs() -> str:
    """srt/model_executor/model_runner_components/cuda_graph_setup.py:430 and :453."""
    return (
        f"{stamp(72)}Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, "
        "bs=[1, 2, 4, 8, 16, 24, 32], avail mem=18.10 GB\n"
        f"{stamp(90)}Capture target decode CUDA graph end. elapsed=18.00 s, mem usage=0.62 GB, avail mem=17.48 GB.\n"
    )


def scheduler(tokens: int, context: int = 32768, chunk: int = 8192, requests: int = 3786) -> str:
    """srt/managers/scheduler.py:1069, TP0 only."""
    return (
        f"{stamp(91)}max_total_num_tokens={tokens}, chunked_prefill_size={chunk}, max_prefill_tokens=16384, "
        f"max_running_requests={requests}, context_len={context}, available_gpu_mem=17.48 GB\n"
    )


def serving(ready_at: int = 95) -> str:
    """uvicorn's own lines, the warm-up request, then srt/entrypoints/http_server.py:2355."""
    return (
        f"{stamp(92)}INFO:     Started server process [1234]\n"
        f"{stamp(92)}INFO:     Waiting for application startup.\n"
        f"{stamp(92)}INFO:     Application startup complete.\n"
        f"{stamp(92)}INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)\n"
        f'{stamp(93)}INFO:     127.0.0.1:50000 - "GET /model_info HTTP/1.1" 200 OK\n'
        f'{stamp(94)}INFO:     127.0.0.1:50002 - "POST /generate HTTP/1.1" 200 OK\n'
        f"{stamp(ready_at)}The server is fired up and ready to roll!\n"
    )


def good_boot(context: int = 32768, chunk: int = 8192, tokens: int = 242_360, model: str = MODEL) -> str:
    """A boot that reached ready: its pool holds `tokens`, whatever the context asked."""
    return (
        head(model, context, chunk)
        + kv_line(tokens, 29.59, 29.59)
        + pool_end()
        + graphs()
        + scheduler(tokens, context, chunk)
        + serving()
    )


def scheduler_failure(exception: str, model: str = MODEL, context: int = 32768, chunk: int = 8192) -> str:
    """srt/managers/scheduler.py:4951 logs the traceback; srt/entrypoints/engine.py:1651 is the parent's sigquit."""
    return (
        head(model, context, chunk) + f"{stamp(71)}Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/sglang/sglang/srt/managers/scheduler.py", line 4929, in run_scheduler_process\n'
        "    scheduler = Scheduler(\n"
        f"{exception}\n\n"
        f"{stamp(71)}Received sigquit from a child process. It usually means the child failed.\n"
    )


# srt/model_executor/pool_configurator.py:64 (with the current value, as __post_init__ appends it)
NOT_ENOUGH = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.45"
)
# srt/mem_cache/kv_cache_configurator.py:1648
NO_KV_MEMORY = (
    "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.4. Raise "
    "--mem-fraction-static above 0.447 (minimum viable = 1 - available/pre = 0.4467). If using speculative "
    "decoding, draft weights are now counted."
)
# srt/model_executor/runner/decode_cuda_graph_runner.py:418 around torch's CUDACachingAllocator text,
# then CUDA_GRAPH_CAPTURE_FAILED_MSG (srt/model_executor/runner_backend_utils/__init__.py:14)
GRAPH_OOM = (
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 139.80 GiB of which 1.21 GiB is free.\n"
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "
)
# srt/configs/model_config.py:775, raised (no SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN)
_LONGER = (
    "Warning: User-specified context_length (262144) is greater than the derived context_length (131072). "
    "This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ "
    "from max_position_embeddings in the model's config."
)
CONTEXT_REFUSED = (
    f"ValueError: {_LONGER} To allow overriding this maximum, set the env var "
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
)
CONTEXT_WARNED = f"{stamp(60)}{_LONGER}\n"  # the same text, logged by logger.warning when the env var is set
# srt/entrypoints/engine.py:1681
DIED = (
    "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), "
    "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
)
# srt/entrypoints/engine.py:1707, after a scheduler error no rule names
INIT_FAILED = "RuntimeError: Initialization failed. Please see the error messages above."
UNKNOWN = "AssertionError: attention backend fa3 needs page_size 1"
# srt/utils/common.py:1972, assert_pkg_version from srt/entrypoints/engine.py:1634
NO_KERNEL = (
    "Exception: sglang-kernel with minimum required version 0.4.5 is not installed. Please reinstall the "
    "latest version with `pip install sglang-kernel --force-reinstall`"
)
IMPORT = "ImportError: /opt/sglang/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa"
# argparse, srt/server_args.py:9355 names the program "sglang serve"
BAD_FLAG = (
    "usage: sglang serve [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]\n"
    "sglang serve: error: unrecognized arguments: --max-model-len 32768\n"
)
# srt/mem_cache/kv_cache_configurator.py:1702
PROFILED = (
    f"{stamp(71)}max_total_tokens=400000 is larger than the profiled value 242360. Use the profiled value instead.\n"
)
