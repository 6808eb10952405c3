"""SGLang as an Engine: its server, benched by vLLM's client so both engines' figures come from one client."""

from collections.abc import Mapping, Sequence

from redline.engines.base import Engine, MemoryModel
from redline.engines.sglang import argv, bootlog, flags, memory
from redline.engines.vllm.bench import parse_bench_result
from redline.engines.vllm.bench_dataset import timed_trace
from redline.models import BenchResult, BenchWorkload, BootSignals, ServeConfig, Widening
from redline.models.trace import TraceRow


class SGLang(Engine):
    name = "sglang"
    title = "SGLang"
    default_command = argv.COMMAND
    # /health answers 503 until the warm-up request passed (the moment of the ready line), then generates one
    # token per call: after a smoke test it proves the scheduler still serves, not only that the HTTP process
    # lives. /v1/models answers as soon as uvicorn listens, before warm-up, so a boot dying there would look ready.
    health_path = "/health"
    long_context_env = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
    kv_block_size = 1  # SGLang's page_size on CUDA (srt/arg_groups/overrides.py, _page_size_default)
    # SGLang boots at any --context-length its model allows, whatever its pool holds (requests longer than
    # the pool are refused at run time), and it profiles no prefill chunk at boot: a boot proves neither knob.
    pool_bounds_context = True
    bench_engine = "vllm"  # one client for both engines: their figures compare by construction
    prefix_caching_default = True  # the radix cache is on unless --disable-radix-cache
    cache_reset_path = "/flush_cache"  # always served; 200 once flushed (400 while requests run)

    def memory_model(self) -> MemoryModel:
        return memory

    def serve_argv(self, config: ServeConfig, executable: Sequence[str] | None = None) -> list[str]:
        return argv.serve_argv(config, self.command(executable))

    def admit(self, config: ServeConfig, widening: Widening | None = None) -> list[str]:
        return flags.TABLE.admit(config, widening)

    def deploy_option(self, item: str) -> tuple[str, bool]:
        return flags.TABLE.deploy_option(item)

    def bench_argv(
        self,
        config: ServeConfig,
        workload: BenchWorkload,
        *,
        result_dir: str,
        result_filename: str,
        executable: Sequence[str] | None = None,
    ) -> list[str]:
        # `executable` runs the bench client (vLLM's), as the target names it; by default `vllm` on PATH.
        return argv.bench_argv(
            config,
            workload,
            result_dir=result_dir,
            result_filename=result_filename,
            executable=executable or argv.BENCH_COMMAND,
        )

    def version_argv(self, executable: Sequence[str] | None = None) -> list[str]:
        return argv.version_argv(self.command(executable))

    def parse_boot_log(self, text: str) -> BootSignals:
        return bootlog.parse_boot_log(text)

    def served_model(self, text: str) -> str | None:
        return bootlog.served_model(text)

    def bench_dataset(self, workload: BenchWorkload, rows: Sequence[TraceRow]) -> str:
        return timed_trace(workload, rows)  # the bench client is vLLM's

    def parse_bench_result(self, text: str, slo: Mapping[str, float] | None = None) -> BenchResult:
        return parse_bench_result(text, slo)  # the client is vLLM's, so is its result file

    def log_message(self, line: str) -> str:
        return bootlog.message(line)

    def boot_seconds(self, text: str) -> float | None:
        return bootlog.boot_seconds(text)
