"""Which `vllm serve` flags and environment variables a serve config may carry, read against vLLM's real flag table.

vLLM's parser accepts more spellings than one: argparse takes any unique prefix
(`--max-model` for `--max-model-len`), vLLM turns underscores into dashes, and a
JSON-valued flag takes dotted sub-keys (`--compilation-config.cudagraph_mode=X`).
Every extra flag is resolved the way vLLM would resolve it, then judged by the
option it lands on: owned by a ServeConfig field (refused: set the field), a
serving lever (allowed), or anything else (refused, with the reason when the flag
loads code, reads host files or opens the server up).
"""

import json
from functools import cache
from importlib import resources

from redline.errors import InputError

# The options a ServeConfig field sets; naming them again would make the recorded config lie.
OWNED = frozenset({
    "model", "host", "port", "max_model_len", "max_num_batched_tokens", "gpu_memory_utilization", "kv_cache_dtype",
    "enforce_eager", "compilation_config", "optimization_level", "enable_chunked_prefill", "enable_prefix_caching",
    "max_num_seqs", "tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size", "load_format",
})

# The levers that tune serving: scheduling, memory, kernels, parallel layout, logging.
LEVERS = frozenset({
    "all2all_backend", "async_scheduling", "attention_backend", "attention_config", "block_size", "cpu_offload_gb",
    "cp_kv_cache_interleave_size", "cudagraph_capture_sizes", "dbo_decode_token_threshold",
    "dbo_prefill_token_threshold", "dcp_kv_cache_interleave_size", "decode_context_parallel_size",
    "disable_cascade_attn", "disable_chunked_mm_input", "disable_custom_all_reduce", "disable_hybrid_kv_cache_manager",
    "disable_log_stats", "disable_sliding_window", "disable_uvicorn_access_log", "dtype", "enable_dbo", "enable_eplb",
    "enable_expert_parallel", "enable_flashinfer_autotune", "enable_log_requests", "eplb_config",
    "expert_placement_strategy", "gdn_prefill_backend", "kv_cache_dtype_skip_layers", "kv_cache_memory_bytes",
    "kv_cache_metrics", "kv_offloading_backend", "kv_offloading_size", "kv_sharing_fast_prefill", "language_model_only",
    "limit_mm_per_prompt", "linear_backend", "long_prefill_token_threshold", "mamba_backend", "mamba_block_size",
    "mamba_cache_dtype", "mamba_cache_mode", "mamba_ssm_cache_dtype", "max_cudagraph_capture_size", "max_logprobs",
    "max_num_active_seqs", "max_num_queued_reqs", "max_num_queued_tokens", "max_num_scheduled_tokens",
    "max_parallel_loading_workers", "mm_encoder_attn_backend", "mm_processor_cache_gb", "moe_backend",
    "num_gpu_blocks_override", "numa_bind", "performance_mode", "prefill_context_parallel_size",
    "prefill_schedule_interval", "prefix_caching_hash_algo", "quantization", "safetensors_load_strategy",
    "scheduling_policy", "seed", "served_model_name", "skip_mm_profiling", "spec_method", "spec_tokens",
    "speculative_config", "stream_interval", "ubatch_size", "uvicorn_log_level",
})

_CODE = "loads Python code named by the caller"
_FILES = "reads or writes a path on the host"
_NETWORK = "connects the server to other hosts"
_ACCESS = "changes who can reach the server and how"
_SOURCE = "changes where the model's code or files come from"
REFUSED = {
    "trust_remote_code": "runs the model repository's own Python code",
    **dict.fromkeys(("tool_parser_plugin", "reasoning_parser_plugin", "io_processor_plugin", "logits_processors",
                     "middleware", "worker_cls", "worker_extension_cls", "scheduler_cls", "model_class_overrides",
                     "distributed_executor_backend"), _CODE),
    **dict.fromkeys(("allowed_local_media_path", "chat_template", "config", "generation_config", "hf_config_path",
                     "download_dir", "log_config_file", "logging_config", "lora_modules", "default_mm_loras",
                     "mm_encoder_fp8_scale_path", "mm_encoder_fp8_scale_save_path", "model_loader_extra_config",
                     "spec_model"), _FILES),
    **dict.fromkeys(("allowed_media_domains", "kv_transfer_config", "ec_transfer_config", "kv_events_config",
                     "otlp_traces_endpoint", "weight_transfer_config", "data_parallel_address", "master_addr",
                     "tool_server"), _NETWORK),
    **dict.fromkeys(("api_key", "ssl_keyfile", "ssl_certfile", "ssl_ca_certs", "ssl_cert_reqs", "ssl_ciphers",
                     "root_path", "allowed_origins", "allow_credentials", "allowed_headers", "allowed_methods", "uds",
                     "grpc", "grpc_port", "headless"), _ACCESS),
    **dict.fromkeys(("code_revision", "revision", "tokenizer", "tokenizer_revision", "hf_token", "hf_overrides"),
                    _SOURCE),
}

# Environment a serve config may set: the engine's own tuning switches and the runtime's thread and memory knobs.
ENV_LEVERS = frozenset({
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_ATTENTION_BACKEND", "VLLM_USE_FLASHINFER_SAMPLER", "VLLM_FLASH_ATTN_VERSION",
    "VLLM_USE_DEEP_GEMM", "VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU",
    "VLLM_NO_USAGE_STATS", "VLLM_LOGGING_LEVEL", "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD",
    "VLLM_ALL2ALL_BACKEND", "VLLM_ENGINE_ITERATION_TIMEOUT_S", "VLLM_RPC_TIMEOUT", "VLLM_MARLIN_USE_ATOMIC_ADD",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM", "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_DEBUG", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_CUMEM_ENABLE",
})
_LOADER = "changes which code the loader or the interpreter runs"
ENV_REFUSED = {
    **dict.fromkeys(("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP",
                     "PYTHONUSERBASE", "PYTHONINSPECT", "PATH", "BASH_ENV", "ENV", "VLLM_PLUGINS",
                     "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN"), _LOADER),
    **dict.fromkeys(("HF_ENDPOINT", "HF_HUB_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                     "TRANSFORMERS_CACHE", "VLLM_CONFIG_ROOT", "VLLM_CACHE_ROOT"), "changes where code and files come from"),
}


@cache
def _table() -> tuple[dict[str, str], frozenset[str]]:
    text = resources.files("redline.engines.vllm").joinpath("data/serve-flags.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return data["options"], frozenset(data["takes_value"])


def resolve(flag: str) -> str:
    """The option vLLM's parser would take `flag` (--name or --name=value) for, as it names its dest."""
    options, _ = _table()
    name = flag.split("=", 1)[0]
    base = name.split(".", 1)[0]  # a dotted sub-key of a JSON-valued flag belongs to that flag
    spelled = "--" + base[2:].replace("_", "-")
    if spelled in options:
        return options[spelled]
    matches = {options[o] for o in options if o.startswith(spelled) and o.startswith("--")}
    if len(matches) == 1:  # argparse's allow_abbrev: a unique prefix is that option
        return matches.pop()
    if matches:
        raise InputError(f"extra flag {flag!r} is ambiguous: vLLM would read it as one of {sorted(matches)[:6]}; "
                         "spell the option out")
    raise InputError(f"extra flag {flag!r} is not a `vllm serve` option: check its spelling against `vllm serve --help`")


def check_owned(flag: str) -> str:
    """The flag's dest, unless a ServeConfig field owns it (then InputError: set that field)."""
    dest = resolve(flag)
    if dest in OWNED:
        raise InputError(f"extra flag {flag!r} sets {dest}, a knob the serve config owns: set that field instead")
    return dest


def check_flag(flag: str, widened: frozenset[str] = frozenset()) -> str | None:
    """Refuse a flag that is owned, refused or not a lever; the widening it used (its dest), or None."""
    dest = check_owned(flag)
    if dest in LEVERS:
        return None
    if dest in widened:
        return dest
    why = REFUSED.get(dest, "is not a serving lever redline allows")
    refusal = f"it {why}" if dest in REFUSED else why
    raise InputError(f"extra flag {flag!r} ({dest}) is refused: {refusal}; a person can widen the allowlist "
                     "in the server config (widen: vllm: flags:), and every rung it touches records it")


def check_env(name: str, widened: frozenset[str] = frozenset()) -> str | None:
    """Refuse an environment variable that is not a lever; the widening it used, or None."""
    if name in ENV_LEVERS:
        return None
    if name in widened:
        return name
    why = ENV_REFUSED.get(name)
    refusal = f"it {why}" if why else "it is not an engine setting redline allows"
    raise InputError(f"environment variable {name} is refused: {refusal}; a person can widen the allowlist "
                     "in the server config (widen: vllm: env:), and every rung it touches records it")
