"""The one interface every engine implements: pure argv builders and readers, no I/O.

An engine knows its own command line, its log texts and its result files; nothing
above engines/ knows any of them. Ladders, sessions and campaigns hold an Engine
from `get_engine(name)` and ask it.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from typing import ClassVar, Protocol

from redline.errors import InputError
from redline.models import BenchResult, BenchWorkload, BootSignals, ServeConfig, Widening
from redline.models.boot import CompileCache
from redline.models.clean_bench import PrefixCounters
from redline.models.memory import Calibration, GpuSpec, MemoryPrediction, Observation
from redline.models.shape import ModelShape
from redline.models.trace import TraceRow


class MemoryModel(Protocol):
    """An engine's memory at boot: fitted on recorded boots, then predicted for a config before it runs (pure)."""

    def calibrate(
        self, observations: Sequence[Observation], left_out: Sequence[str] = (), gpu: GpuSpec | None = None
    ) -> Calibration:
        """Every term fitted on the observations (those of the `left_out` architectures held out); a term of the GPU
        on the boots of `gpu`, the GPU a prediction is for, where there are any."""
        ...

    def pick_anchor(
        self,
        candidates: Sequence[Observation],
        serve: ServeConfig,
        gpu: GpuSpec | None,
        compile_cache: CompileCache | None = None,
    ) -> Observation | None:
        """Of recorded boots of the same model and engine version, the one whose terms stand for this config's (in
        the torch.compile cache state asked for, where the engine's memory depends on it)."""
        ...

    def predict(
        self,
        shape: ModelShape,
        serve: ServeConfig,
        gpu: GpuSpec | None,
        cal: Calibration,
        *,
        model: str,
        architecture: str | None,
        version: str | None,
        anchor: Observation | None = None,
        compile_cache: CompileCache | None = None,
    ) -> MemoryPrediction:
        """What a boot of serve would print about its memory, labelled predicted, with the torch.compile cache it
        finds (None: a fresh deployment's, cold)."""
        ...

    def concurrency(self, kv_cache_tokens: int, max_model_len: int, gpu: GpuSpec | None) -> float:
        """Requests of max_model_len a KV cache of that many tokens holds, as the engine's log prints it: the one
        max_concurrency every prediction, plan and campaign says."""
        ...


class Engine(abc.ABC):
    """An LLM server redline can boot, read and bench."""

    name: ClassVar[str]  # the registry key, as ladders and campaigns name it
    title: ClassVar[str]  # how people write it in prose
    default_command: ClassVar[tuple[str, ...]]  # how a host runs it when its target says nothing
    health_path: ClassVar[str] = "/health"
    # The environment variable that lets the engine serve past the model's positional limit, if any.
    long_context_env: ClassVar[str | None] = None
    # The engine's own KV block size, used when a ladder does not say one.
    kv_block_size: ClassVar[int] = 16
    # The prefill chunk (max_num_batched_tokens) the engine takes when a config gives none.
    default_chunk: ClassVar[int] = 8192
    # True when a boot proves no size: the engine boots at a context its KV pool cannot hold (and profiles no
    # prefill chunk), so the pool's tokens are only the ceiling's candidate and a smoke test alone confirms a
    # rung. False (vLLM) when the boot itself refuses a context its KV cache cannot hold one request of.
    pool_bounds_context: ClassVar[bool] = False
    # The engine whose bench client benches this one (None: its own). A figure's context names that client,
    # and its version, not the server's engine: SGLang is benched by vLLM's `vllm bench serve`.
    bench_engine: ClassVar[str | None] = None
    # Whether a boot caches prompt prefixes when its config leaves enable_prefix_caching unset. Two engines' figures
    # compare only with caching matched (a prefix-cache replay can fake a win), so each engine states its default.
    prefix_caching_default: ClassVar[bool]
    # Where a running server empties its prefix cache on a POST (None: it cannot), so each ranked bench starts from
    # an empty cache; and the environment its server needs to serve that (vLLM: its dev mode, docs/security.md).
    cache_reset_path: ClassVar[str | None] = None
    cache_reset_env: ClassVar[Mapping[str, str]] = {}
    # The environment that boots a server on a cold torch.compile cache whatever the host keeps (it compiles, as a
    # fresh deployment does); empty where the engine's KV cache does not depend on its compile cache.
    cold_compile_env: ClassVar[Mapping[str, str]] = {}

    @abc.abstractmethod
    def serve_argv(self, config: ServeConfig, executable: Sequence[str] | None = None) -> list[str]:
        """The command that boots `config`; refuses a knob this engine cannot honour."""

    @abc.abstractmethod
    def admit(self, config: ServeConfig, widening: Widening | None = None) -> list[str]:
        """Refuse extra flags and env outside the engine's allowlist (unless widened); the widenings used.

        Owned knobs in another spelling are refused whatever the widening: the config must say what ran.
        """

    @abc.abstractmethod
    def deploy_option(self, item: str) -> tuple[str, bool]:
        """The option (its dest) an item of a deploy's argument list lands on, as the engine's parser resolves it
        (prefixes, aliases, `_` for `-`), and whether it takes a value; InputError where it is ambiguous or none."""

    def admit_written(self, config: ServeConfig, what: str, fix: str) -> None:
        """Refuse a config a workspace file holds (a known-good entry, an A/B's trial record) whose flags or env the
        allowlist refuses, with no widening (a widening is the server config's, never a file's): `what` names the
        config and its file, `fix` says what to do."""
        try:
            self.admit(config)
        except InputError as exc:
            raise InputError(f"{what} is refused: {exc}; {fix}") from exc

    @abc.abstractmethod
    def bench_argv(
        self,
        config: ServeConfig,
        workload: BenchWorkload,
        *,
        result_dir: str,
        result_filename: str,
        executable: Sequence[str] | None = None,
    ) -> list[str]:
        """The bench client's command against the server `config` booted, writing one result file."""

    def bench_dataset(self, workload: BenchWorkload, rows: Sequence[TraceRow]) -> str:
        """The file a trace bench's client reads (written beside its result, as `workload.trace_file`): its requests,
        each with its lengths and arrival, fresh prompts each; InputError where the client replays no trace."""
        raise InputError(f"{self.title}'s bench client replays no trace: give the workload random prompts")

    @abc.abstractmethod
    def version_argv(self, executable: Sequence[str] | None = None) -> list[str]:
        """A command that prints the engine's version."""

    @abc.abstractmethod
    def parse_boot_log(self, text: str) -> BootSignals:
        """Every signal the boot log gives and how the boot ended; LogParseError if it is not this engine's log."""

    @abc.abstractmethod
    def served_model(self, text: str) -> str | None:
        """The model a boot log served, as it was given, if the log says."""

    @abc.abstractmethod
    def parse_bench_result(self, text: str, slo: Mapping[str, float] | None = None) -> BenchResult:
        """The figures of one bench result file; InputError if it is not one. `slo`: per-request limits (ttft_ms,
        tpot_ms) an open-loop bench's goodput is counted against."""

    @abc.abstractmethod
    def log_message(self, line: str) -> str:
        """A log line without its process tag, level, time and source."""

    @abc.abstractmethod
    def memory_model(self) -> MemoryModel:
        """The engine's memory model (engines/<name>/memory.py)."""

    @abc.abstractmethod
    def boot_seconds(self, text: str) -> float | None:
        """Seconds from the log's first timestamp to ready (or, for a failed boot, its last timestamp)."""

    def health_url(self, config: ServeConfig) -> str:
        """Where the booted server answers 200 once it is ready, from the host it runs on."""
        return self._url(config, self.health_path)

    metrics_path: ClassVar[str | None] = None  # where the server's metrics are served (None: it serves none)
    # A bench client that stays resident for one server's benches (its Python source: ops/resident.py runs it); None:
    # every bench starts the client afresh.
    resident_script: ClassVar[str | None] = None

    # What a deploy sets for itself, never a champion's to write back: where the server listens, the model it loads
    # and how (a campaign's dummy weights prove nothing about a deploy's)
    placement_flags: ClassVar[frozenset[str]] = frozenset({"--host", "--port", "--load-format", "--model-path"})

    @property
    def values_args_key(self) -> str:
        """Where a Helm values file lists this engine's extra arguments, by the charts' custom (vllm.extraArgs)."""
        return f"{self.name}.extraArgs"

    def deploy_flags(self, config: ServeConfig) -> tuple[list[str], list[str]]:
        """A config's own flags as a deploy's argument list takes them, one item each (`--flag=value`, `--switch`):
        its serve command less the command, the model and `placement_flags`; and what was left out."""
        argv = self.serve_argv(config, ["<engine>"])
        i = next((k for k, item in enumerate(argv) if item.startswith("--")), len(argv))
        flags: list[str] = []
        left: list[str] = []
        while i < len(argv):
            flag, value = argv[i], None
            if "=" not in flag and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                value, i = argv[i + 1], i + 1
            i += 1
            item = flag if value is None else f"{flag}={value}"
            (left if flag.split("=", 1)[0] in self.placement_flags else flags).append(item)
        return flags, left

    def metrics_url(self, config: ServeConfig) -> str | None:
        """Where the booted server serves its metrics, from the host it runs on; None: it serves none."""
        return self._url(config, self.metrics_path) if self.metrics_path is not None else None

    completions_path: ClassVar[str] = "/v1/completions"  # the OpenAI-style completions API both engines serve

    def completions_request(self, config: ServeConfig, prompts: list[str], max_tokens: int) -> tuple[str, str]:
        """Where to POST the prompts for greedy answers with each chosen token's log-probability, and the JSON body
        (the accuracy gate's ask: one request, one choice per prompt)."""
        body = {
            "model": config.model,
            "prompt": prompts,
            "max_tokens": max_tokens,
            "temperature": 0,
            "logprobs": 1,
            **self.completions_extras,
        }
        return self._url(config, self.completions_path), json.dumps(body)

    # what the engine's completions API takes beyond OpenAI's (vLLM: tokens named by id, so two that decode alike
    # still differ)
    completions_extras: ClassVar[dict[str, object]] = {}

    def _url(self, config: ServeConfig, path: str) -> str:
        host = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
        return f"http://{host}:{config.port}{path}"

    def cache_reset_url(self, config: ServeConfig) -> str | None:
        """Where to POST to empty the booted server's prefix cache, from the host it runs on; None: it cannot."""
        return self._url(config, self.cache_reset_path) if self.cache_reset_path is not None else None

    def cache_reset_done(self, answer: str) -> bool:
        """Whether the server's 200 answer to that POST says the cache was emptied."""
        return True

    def prefix_cache_counters(self, metrics_text: str) -> PrefixCounters | None:
        """The prefix cache's counters (prompt tokens looked up, found) in the server's metrics; None: not there."""
        return None

    def cpu_env(self, folder: str) -> dict[str, str] | None:
        """The environment the engine's CPU build needs to run quietly inside folder; None if it has none."""
        return None

    def prefix_caching(self, config: ServeConfig) -> bool:
        """Whether a boot of config caches prefixes: the config's choice, else this engine's default."""
        chosen = config.enable_prefix_caching
        return self.prefix_caching_default if chosen is None else chosen

    @property
    def bench_client(self) -> str:
        """The name of the engine whose bench client this engine's bench_argv runs."""
        return self.bench_engine or self.name

    def command(self, executable: Sequence[str] | None) -> list[str]:
        return list(executable) if executable else list(self.default_command)
