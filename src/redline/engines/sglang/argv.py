"""Argv lists for SGLang's server (0.5.17 flag names) and for the bench client that benches it, vLLM's.

| ServeConfig              | SGLang 0.5.17                                                    |
| ------------------------ | ---------------------------------------------------------------- |
| model                    | --model-path M                                                   |
| host, port               | --host H --port P                                                |
| max_model_len            | --context-length N                                               |
| max_num_batched_tokens   | --chunked-prefill-size N                                         |
| gpu_memory_utilization   | --mem-fraction-static F (weights + KV pool; not vLLM's meaning)  |
| kv_cache_dtype           | --kv-cache-dtype D (SGLang's choices only)                       |
| enforce_eager            | --cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled |
| cudagraph_mode           | refused: SGLang has no such mode                                 |
| enable_chunked_prefill   | false: --chunked-prefill-size -1 (refused with max_num_batched_tokens) |
| enable_prefix_caching    | false: --disable-radix-cache                                     |
| max_num_seqs             | --max-running-requests N                                         |
| tensor/data/pipeline_parallel_size | --tp-size / --dp-size / --pp-size                      |
| load_format              | --load-format F (SGLang's choices only)                          |
"""

from collections.abc import Sequence

from redline.engines.sglang import flags
from redline.engines.vllm.argv import COMMAND as _VLLM_COMMAND
from redline.engines.vllm.argv import bench_argv as vllm_bench_argv
from redline.errors import InputError
from redline.models import BenchWorkload, ServeConfig

COMMAND = ("python3", "-m", "sglang.launch_server")
BENCH_COMMAND = _VLLM_COMMAND  # the bench client is vLLM's
# `python -m sglang.launch_server` still works in 0.5.17 (with a UserWarning), and needs no console script:
# a relocated site-packages on PYTHONPATH is enough. `sglang serve` takes the same flags.

# srt/server_args.py (0.5.17): kv_cache_dtype's choices, and LOAD_FORMAT_CHOICES.
KV_CACHE_DTYPES = ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16", "fp4_e2m1")
LOAD_FORMATS = (
    "auto",
    "pt",
    "safetensors",
    "npcache",
    "dummy",
    "sharded_state",
    "presharded",
    "gguf",
    "bitsandbytes",
    "mistral",
    "layered",
    "flash_rl",
    "remote",
    "remote_instance",
    "fastsafetensors",
    "private",
    "runai_streamer",
)
# What `sglang version` prints (cli/main.py:8), read from the installed package's metadata without importing it.
_VERSION_CODE = "import importlib.metadata as m; print('sglang version:', m.version('sglang'))"
# A graph backend per phase since 0.5.17; --disable-cuda-graph is a deprecated alias for both of these.
EAGER = ["--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled"]


def _optional(flag: str, value: object) -> list[str]:
    return [] if value is None else [flag, str(value)]


def _choice(knob: str, value: str | None, choices: Sequence[str], hint: str = "") -> str | None:
    if value is not None and value not in choices:
        raise InputError(f"{knob} {value!r} is not one SGLang 0.5.17 takes ({', '.join(choices)}){hint}")
    return value


def _refuse_missing(config: ServeConfig) -> None:
    """A knob SGLang lacks is refused by name, never dropped: the recorded config must be what ran."""
    if config.cudagraph_mode is not None:
        raise InputError(
            f"cudagraph_mode {config.cudagraph_mode!r} is vLLM's: SGLang has no cudagraph mode. "
            "Unset it; enforce_eager turns SGLang's graphs off, and --cuda-graph-max-bs-decode and the "
            "like size them"
        )
    if config.enable_chunked_prefill is False and config.max_num_batched_tokens is not None:
        raise InputError(
            "enable_chunked_prefill false with max_num_batched_tokens set: SGLang has one knob for both "
            "(--chunked-prefill-size, -1 turns chunking off); unset one of them"
        )


def _chunking(config: ServeConfig) -> list[str]:
    if config.enable_chunked_prefill is False:
        return ["--chunked-prefill-size", "-1"]
    return _optional("--chunked-prefill-size", config.max_num_batched_tokens)  # chunking is SGLang's default


def serve_argv(config: ServeConfig, executable: Sequence[str] = COMMAND) -> list[str]:
    """The SGLang server command for one boot; `executable` is how the host runs it."""
    _refuse_missing(config)
    for flag in config.extra_flags:
        flags.TABLE.check_owned(flag)
    fp8 = " (vLLM's fp8 is SGLang's fp8_e4m3)" if config.kv_cache_dtype == "fp8" else ""
    argv = [*executable, "--model-path", config.model, "--host", config.host, "--port", str(config.port)]
    argv += ["--context-length", str(config.max_model_len), *_chunking(config)]
    argv += ["--mem-fraction-static", repr(config.gpu_memory_utilization)]
    argv += _optional("--kv-cache-dtype", _choice("kv_cache_dtype", config.kv_cache_dtype, KV_CACHE_DTYPES, fp8))
    # enforce_eager means no captured graphs in any phase. In 0.5.17 --disable-cuda-graph is deprecated (it prints a
    # warning and may go); the per-phase backends are its named successor and win over every legacy switch.
    argv += EAGER if config.enforce_eager else []
    argv += ["--disable-radix-cache"] if config.enable_prefix_caching is False else []  # radix caching is the default
    argv += _optional("--max-running-requests", config.max_num_seqs)
    for name, flag in (("tensor", "--tp-size"), ("data", "--dp-size"), ("pipeline", "--pp-size")):
        size = getattr(config, f"{name}_parallel_size")
        argv += [flag, str(size)] if size != 1 else []
    argv += _optional("--load-format", _choice("load_format", config.load_format, LOAD_FORMATS))
    return argv + list(config.extra_flags)


def bench_argv(
    config: ServeConfig,
    workload: BenchWorkload,
    *,
    result_dir: str,
    result_filename: str,
    executable: Sequence[str] = BENCH_COMMAND,
) -> list[str]:
    """vLLM's `vllm bench serve` against the SGLang server `config` booted: one client benches both engines.

    --backend openai: in vLLM's client it is the same request function as `vllm` (async_request_openai_completions,
    vllm/benchmarks/lib/endpoint_request_func.py), so the figures compare; the name records that the server was
    not vLLM. The tokenizer is the model's own folder: the client counts tokens itself.
    """
    return vllm_bench_argv(
        config,
        workload,
        result_dir=result_dir,
        result_filename=result_filename,
        executable=executable,
        backend="openai",
        tokenizer=config.model,
    )


def version_argv(executable: Sequence[str] = COMMAND) -> list[str]:
    """A command that prints `sglang version: X`, from the interpreter (or `sglang` command) that runs the server."""
    exe = list(executable)
    if len(exe) >= 3 and exe[-2] == "-m" and exe[-1].startswith("sglang"):
        return [*exe[:-2], "-c", _VERSION_CODE]
    if exe and exe[-1] == "serve":
        return [*exe[:-1], "version"]
    raise InputError(
        f"cannot tell how {' '.join(exe)!r} prints SGLang's version: give the engine command as "
        "[python, -m, sglang.launch_server] or [sglang, serve]"
    )
