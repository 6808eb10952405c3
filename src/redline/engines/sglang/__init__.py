"""SGLang: its server argv (0.5.17 flag names), its allowlist, its boot-log reader; benched by vLLM's client."""

from redline.engines.sglang.argv import bench_argv, serve_argv
from redline.engines.sglang.bootlog import boot_seconds, parse_boot_log, served_model

__all__ = ["bench_argv", "boot_seconds", "parse_boot_log", "serve_argv", "served_model"]
