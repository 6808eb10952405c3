"""vLLM: the `vllm serve` / `vllm bench serve` argv, and readers for what they write."""

from redline.engines.vllm.argv import bench_argv, serve_argv
from redline.engines.vllm.bench import parse_bench_result
from redline.engines.vllm.bootlog import parse_boot_log
from redline.engines.vllm.bootmeta import boot_seconds, served_model

__all__ = ["bench_argv", "boot_seconds", "parse_bench_result", "parse_boot_log", "serve_argv", "served_model"]
