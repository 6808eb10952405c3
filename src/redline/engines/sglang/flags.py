"""Which SGLang server flags and environment variables a serve config may carry, read against SGLang's real flag table.

data/serve-flags.json is SGLang 0.5.17's own option table (data/read_flags.py read it
from srt/server_args.py). SGLang parses with a plain argparse.ArgumentParser: a unique
prefix is an abbreviation (`--tp` is `--tp-size`), but an underscore is not a dash and a
dotted sub-key is no option, so those spellings are refused as SGLang would refuse them,
except that a knob the serve config owns is refused as owned in any spelling.
"""

from redline.engines.flagtable import (
    ACCESS, CODE, ENV_SOURCE, FILES, LOADER, LOADER_ENV, NETWORK, RUNTIME_ENV, SOURCE, SOURCE_ENV, FlagTable, reasons,
)

# The options a ServeConfig field sets; naming them again would make the recorded config lie. The graph
# backends (and their deprecated and JSON spellings) are enforce_eager's; the radix cache is enable_prefix_caching's.
OWNED = frozenset({
    "model_path", "host", "port", "context_length", "chunked_prefill_size", "mem_fraction_static", "kv_cache_dtype",
    "cuda_graph_backend_decode", "cuda_graph_backend_prefill", "cuda_graph_config", "disable_cuda_graph",
    "disable_decode_cuda_graph", "disable_prefill_cuda_graph", "disable_radix_cache", "max_running_requests",
    "tp_size", "dp_size", "pp_size", "load_format",
})

# The levers that tune serving: scheduling, memory, kernels, graphs' sizes, parallel layout, logging.
LEVERS = frozenset({
    "attention_backend", "attn_cp_size", "bf16_gemm_backend", "cpu_offload_gb", "cuda_graph_bs_decode",
    "cuda_graph_bs_prefill", "cuda_graph_max_bs_decode", "cuda_graph_max_bs_prefill", "cuda_graph_tc_compiler",
    "dcp_size", "decode_attention_backend", "decode_log_interval", "disable_chunked_prefix_cache",
    "disable_cuda_graph_padding", "disable_custom_all_reduce", "disable_flashinfer_autotune",
    "disable_hybrid_swa_memory", "disable_overlap_schedule", "disable_shared_experts_fusion",
    "disable_tokenizer_batch_decode", "dist_timeout", "dtype", "enable_cache_report", "enable_cudagraph_gc",
    "enable_deterministic_inference", "enable_dp_attention", "enable_dp_lm_head", "enable_dynamic_chunking",
    "enable_eplb", "enable_fp32_lm_head", "enable_hierarchical_cache", "enable_metrics", "enable_mixed_chunk",
    "enable_nccl_nvls", "enable_single_batch_overlap", "enable_symm_mem", "enable_tf32_matmul",
    "enable_tokenizer_batch_encode", "enable_torch_compile", "enable_two_batch_overlap", "ep_num_redundant_experts",
    "ep_size", "flashinfer_mla_disable_ragged", "fp4_gemm_runner_backend", "fp8_gemm_runner_backend",
    "hicache_io_backend", "hicache_mem_layout", "hicache_ratio", "hicache_size", "hicache_write_policy",
    "linear_attn_backend", "linear_attn_decode_backend", "linear_attn_prefill_backend", "load_balance_method",
    "log_level", "log_level_http", "mamba_backend", "mamba_full_memory_ratio", "mamba_radix_cache_strategy",
    "mamba_ssm_dtype", "max_mamba_cache_size", "max_prefill_tokens", "max_queued_requests", "max_total_tokens",
    "moe_a2a_backend", "moe_dense_tp_size", "moe_dp_size", "moe_runner_backend", "num_continuous_decode_steps",
    "num_reserved_decode_tokens", "page_size", "prefill_attention_backend", "prefill_max_requests", "quantization",
    "radix_eviction_policy", "random_seed", "sampling_backend", "schedule_conservativeness", "schedule_policy",
    "show_time_cost", "speculative_algorithm", "speculative_eagle_topk", "speculative_num_draft_tokens",
    "speculative_num_steps", "stream_interval", "swa_full_tokens_ratio", "tbo_token_distribution_threshold",
    "tokenizer_worker_num", "detokenizer_worker_num", "torch_compile_max_bs", "triton_attention_num_kv_splits",
    "triton_attention_reduce_in_fp32", "triton_attention_split_tile_size", "watchdog_timeout",
    "weight_loader_disable_mmap", "weight_loader_prefetch_num_threads",
})

REFUSED = {
    "trust_remote_code": "runs the model repository's own Python code",
    "enable_custom_logit_processor": "lets requests send serialized Python logit processors the server runs",
    "delete_ckpt_after_loading": "deletes the model's files on the host after loading",
    "served_model_name": "renames the model the server answers to, and the bench client asks for it by its path",
    "skip_server_warmup": "lets the server report ready before a warm-up request passed, so a boot proves less",
    **reasons(**{
        CODE: ("custom_weight_loader", "forward_hooks", "sidecar", "sidecar_args", "model_config_parser", "use_ray",
               "tool_server"),
        FILES: ("config", "chat_template", "completion_template", "download_dir", "crash_dump_folder",
                "debug_tensor_dump_input_file", "debug_tensor_dump_output_folder", "decrypted_config_file",
                "decrypted_draft_config_file", "export_metrics_to_file_dir", "file_storage_path", "flexkv_config_file",
                "init_expert_location", "kt_weight_path", "lmcache_config_file", "lora_paths",
                "model_loader_extra_config", "modelopt_checkpoint_restore_path", "modelopt_checkpoint_save_path",
                "modelopt_export_path", "msprobe_dump_config", "pdmux_config_path", "quantization_param_path",
                "rl_quant_profile", "spec_trace_dir", "speculative_dspark_confidence_sts_path",
                "speculative_dspark_sps_table_path", "speculative_ngram_external_corpus_path", "speculative_token_map",
                "weight_cache_socket"),
        NETWORK: ("dist_init_addr", "nnodes", "node_rank", "nccl_port", "disaggregation_mode",
                  "disaggregation_bootstrap_port", "disaggregation_ib_device", "disaggregation_transfer_backend",
                  "encoder_urls", "encoder_register_urls", "encoder_only", "decoupled_spec_bind_endpoint",
                  "decoupled_spec_connect_endpoints", "kv_events_config", "otlp_traces_endpoint", "mooncake_ib_device",
                  "hicache_storage_backend", "hicache_storage_backend_extra_config", "modelexpress_config",
                  "remote_instance_weight_loader_seed_instance_ip",
                  "remote_instance_weight_loader_seed_instance_service_port", "engine_info_bootstrap_port"),
        ACCESS: ("api_key", "admin_api_key", "ssl_keyfile", "ssl_certfile", "ssl_ca_certs", "ssl_keyfile_password",
                 "enable_ssl_refresh", "fastapi_root_path", "grpc_mode", "smg_grpc_mode", "grpc_port",
                 "smg_http_sidecar_port"),
        SOURCE: ("tokenizer_path", "revision", "speculative_draft_model_path", "speculative_draft_model_revision",
                 "json_model_override_args"),
    }),
}

# Environment a serve config may set: SGLang's own tuning switches and the runtime's thread and memory knobs.
ENV_LEVERS = RUNTIME_ENV | {
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "SGLANG_LOG_MS", "SGLANG_WARMUP_TIMEOUT", "SGLANG_SET_CPU_AFFINITY",
    "SGLANG_ENABLE_JIT_DEEPGEMM", "SGLANG_JIT_DEEPGEMM_PRECOMPILE", "SGLANG_KILLPG_ON_SCHEDULER_EXCEPTION",
    "SGLANG_ENABLE_TORCH_INFERENCE_MODE", "SGLANG_INIT_NEW_TOKEN_RATIO", "SGLANG_RETRACT_DECODE_STEPS",
    "SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION", "SGLANG_FLASHINFER_WORKSPACE_SIZE",
    "SGLANG_ENABLE_DETERMINISTIC_INFERENCE",
    "SGLANG_NUMA_BIND_V2", "SGLANG_IS_FLASHINFER_AVAILABLE",
}
ENV_REFUSED = reasons(**{
    LOADER: (*LOADER_ENV, "SGLANG_PLUGINS", "SGLANG_EXTERNAL_MODEL_PACKAGE", "SGLANG_EXTERNAL_MM_PROCESSOR_PACKAGE",
             "SGLANG_LOGGING_CONFIG_PATH"),
    ENV_SOURCE: (*SOURCE_ENV, "SGLANG_CACHE_DIR", "SGLANG_DG_CACHE_DIR", "SGLANG_TORCH_PROFILER_DIR",
                 "SGLANG_CUDA_COREDUMP_DIR"),
})
# The readiness probe and the boot's own checks are redline's to rely on, not a serve config's to switch off.
ENV_REFUSED |= reasons(**{
    "changes what the health check or the boot's checks prove": (
        "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "SGLANG_HEALTH_CHECK_TIMEOUT",
        "SGLANG_SKIP_SGL_KERNEL_VERSION_CHECK"),
})

TABLE = FlagTable(
    package="redline.engines.sglang", title="SGLang", command="`python -m sglang.launch_server`",
    help_command="`python -m sglang.launch_server --help`", widen_key="sglang", owned=OWNED, levers=LEVERS,
    refused=REFUSED, env_levers=ENV_LEVERS, env_refused=ENV_REFUSED, underscores=False, subkeys=False,
)
