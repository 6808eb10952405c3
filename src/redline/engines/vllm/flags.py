"""Which `vllm serve` flags and environment variables a serve config may carry, read against vLLM's real flag table.

vLLM's parser accepts more spellings than one: argparse takes any unique prefix
(`--max-model` for `--max-model-len`), vLLM turns underscores into dashes, and a
JSON-valued flag takes dotted sub-keys (`--compilation-config.cudagraph_mode=X`).
Every extra flag is resolved the way vLLM would resolve it, then judged by the
option it lands on: owned by a ServeConfig field (refused: set the field), a
serving lever (allowed), or anything else (refused, with the reason when the flag
loads code, reads host files or opens the server up).
"""

from redline.engines.flagtable import (
    ACCESS,
    CODE,
    ENV_SOURCE,
    FILES,
    LOADER,
    LOADER_ENV,
    NETWORK,
    RUNTIME_ENV,
    SOURCE,
    SOURCE_ENV,
    FlagTable,
    reasons,
)
from redline.engines.json_levers import SubKeys, leaves

# The options a ServeConfig field sets; naming them again would make the recorded config lie.
OWNED = frozenset(
    {
        "model",
        "host",
        "port",
        "max_model_len",
        "max_num_batched_tokens",
        "gpu_memory_utilization",
        "kv_cache_dtype",
        "enforce_eager",
        "compilation_config",
        "optimization_level",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "max_num_seqs",
        "tensor_parallel_size",
        "data_parallel_size",
        "pipeline_parallel_size",
        "load_format",
    }
)

# The levers that tune serving: scheduling, memory, kernels, parallel layout, logging.
LEVERS = frozenset(
    {
        "all2all_backend",
        "async_scheduling",
        "attention_backend",
        "attention_config",
        "block_size",
        "cpu_offload_gb",
        "cp_kv_cache_interleave_size",
        "cudagraph_capture_sizes",
        "dbo_decode_token_threshold",
        "dbo_prefill_token_threshold",
        "dcp_kv_cache_interleave_size",
        "decode_context_parallel_size",
        "disable_cascade_attn",
        "disable_chunked_mm_input",
        "disable_custom_all_reduce",
        "disable_hybrid_kv_cache_manager",
        "disable_log_stats",
        "disable_sliding_window",
        "disable_uvicorn_access_log",
        "dtype",
        "enable_dbo",
        "enable_eplb",
        "enable_expert_parallel",
        "enable_flashinfer_autotune",
        "enable_log_requests",
        "eplb_config",
        "expert_placement_strategy",
        "gdn_prefill_backend",
        "kv_cache_dtype_skip_layers",
        "kv_cache_memory_bytes",
        "kv_cache_metrics",
        "kv_offloading_backend",
        "kv_offloading_size",
        "kv_sharing_fast_prefill",
        "language_model_only",
        "limit_mm_per_prompt",
        "linear_backend",
        "long_prefill_token_threshold",
        "mamba_backend",
        "mamba_block_size",
        "mamba_cache_dtype",
        "mamba_cache_mode",
        "mamba_ssm_cache_dtype",
        "max_cudagraph_capture_size",
        "max_logprobs",
        "max_num_active_seqs",
        "max_num_queued_reqs",
        "max_num_queued_tokens",
        "max_num_scheduled_tokens",
        "max_parallel_loading_workers",
        "mm_encoder_attn_backend",
        "mm_processor_cache_gb",
        "moe_backend",
        "num_gpu_blocks_override",
        "numa_bind",
        "performance_mode",
        "prefill_context_parallel_size",
        "prefill_schedule_interval",
        "prefix_caching_hash_algo",
        "quantization",
        "safetensors_load_strategy",
        "scheduling_policy",
        "seed",
        "served_model_name",
        "skip_mm_profiling",
        "spec_method",
        "spec_tokens",
        "speculative_config",
        "stream_interval",
        "ubatch_size",
        "uvicorn_log_level",
    }
)

REFUSED = {
    "trust_remote_code": "runs the model repository's own Python code",
    **reasons(
        **{
            CODE: (
                "tool_parser_plugin",
                "reasoning_parser_plugin",
                "io_processor_plugin",
                "logits_processors",
                "middleware",
                "worker_cls",
                "worker_extension_cls",
                "scheduler_cls",
                "model_class_overrides",
                "distributed_executor_backend",
            ),
            FILES: (
                "allowed_local_media_path",
                "chat_template",
                "config",
                "generation_config",
                "hf_config_path",
                "download_dir",
                "log_config_file",
                "logging_config",
                "lora_modules",
                "default_mm_loras",
                "mm_encoder_fp8_scale_path",
                "mm_encoder_fp8_scale_save_path",
                "model_loader_extra_config",
                "spec_model",
            ),
            NETWORK: (
                "allowed_media_domains",
                "kv_transfer_config",
                "ec_transfer_config",
                "kv_events_config",
                "otlp_traces_endpoint",
                "weight_transfer_config",
                "data_parallel_address",
                "master_addr",
                "tool_server",
            ),
            ACCESS: (
                "api_key",
                "ssl_keyfile",
                "ssl_certfile",
                "ssl_ca_certs",
                "ssl_cert_reqs",
                "ssl_ciphers",
                "root_path",
                "allowed_origins",
                "allow_credentials",
                "allowed_headers",
                "allowed_methods",
                "uds",
                "grpc",
                "grpc_port",
                "headless",
            ),
            SOURCE: ("code_revision", "revision", "tokenizer", "tokenizer_revision", "hf_token", "hf_overrides"),
        }
    ),
}

# The levers that take a JSON object, whole or by dotted sub-key, and the sub-keys redline allows in each (issue 19,
# class 5): tuning only. A draft or proposer (`model`), its revision, code revision, tokenizer, load config and
# download folder, and anything not named here are refused.
_MM_ITEM = leaves("count", "width", "height", "num_frames", "length")
JSON_LEVERS: dict[str, SubKeys] = {
    "speculative_config": leaves(
        "method",
        "num_speculative_tokens",
        "prompt_lookup_max",
        "prompt_lookup_min",
        "draft_tensor_parallel_size",
        "disable_padded_drafter_batch",
        "parallel_drafting",
        "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob",
        "rejection_sample_method",
        "draft_sample_method",
        "quantization",
        "attention_backend",
        "moe_backend",
    ),
    "attention_config": leaves(
        "backend",
        "flash_attn_version",
        "use_prefill_decode_attention",
        "flash_attn_max_num_splits_for_cuda_graph",
        "use_cudnn_prefill",
        "use_trtllm_ragged_deepseek_prefill",
        "use_trtllm_attention",
        "disable_flashinfer_prefill",
        "disable_flashinfer_q_quantization",
    ),
    "eplb_config": leaves(
        "window_size",
        "step_interval",
        "num_redundant_experts",
        "log_balancedness",
        "log_balancedness_interval",
        "use_async",
        "policy",
    ),
    "limit_mm_per_prompt": {"image": _MM_ITEM, "video": _MM_ITEM, "audio": _MM_ITEM},
}
SUBKEY_REFUSED = {
    "model": "names a draft model or a proposer class, which changes where the model's code or files come from",
    "draft_model_config": SOURCE,
    "draft_load_config": FILES,
    "hf_overrides": SOURCE,
    "enforce_eager": "changes the draft's graph regime, which the recorded regime would not say",
}

# Environment a serve config may set: the engine's own tuning switches and the runtime's thread and memory knobs.
ENV_LEVERS = RUNTIME_ENV | {
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    "VLLM_ATTENTION_BACKEND",
    "VLLM_USE_FLASHINFER_SAMPLER",
    "VLLM_FLASH_ATTN_VERSION",
    "VLLM_USE_DEEP_GEMM",
    "VLLM_CPU_KVCACHE_SPACE",
    "VLLM_CPU_OMP_THREADS_BIND",
    "VLLM_CPU_NUM_OF_RESERVED_CPU",
    "VLLM_NO_USAGE_STATS",
    "VLLM_LOGGING_LEVEL",
    "VLLM_ENABLE_V1_MULTIPROCESSING",
    "VLLM_WORKER_MULTIPROC_METHOD",
    "VLLM_ALL2ALL_BACKEND",
    "VLLM_ENGINE_ITERATION_TIMEOUT_S",
    "VLLM_RPC_TIMEOUT",
    "VLLM_MARLIN_USE_ATOMIC_ADD",
    "VLLM_DISABLE_COMPILE_CACHE",  # a boot on a cold torch.compile cache (a ladder's proof, as a fresh deployment)
}
ENV_REFUSED = reasons(
    **{LOADER: (*LOADER_ENV, "VLLM_PLUGINS"), ENV_SOURCE: (*SOURCE_ENV, "VLLM_CONFIG_ROOT", "VLLM_CACHE_ROOT")}
)

TABLE = FlagTable(
    package="redline.engines.vllm",
    title="vLLM",
    command="`vllm serve`",
    help_command="`vllm serve --help`",
    widen_key="vllm",
    owned=OWNED,
    levers=LEVERS,
    refused=REFUSED,
    env_levers=ENV_LEVERS,
    env_refused=ENV_REFUSED,
    underscores=True,
    subkeys=True,
    json_levers=JSON_LEVERS,
    subkey_refused=SUBKEY_REFUSED,
)


def _table() -> tuple[dict[str, str], frozenset[str]]:
    return TABLE.options, TABLE.takes_value


check_owned = TABLE.check_owned
