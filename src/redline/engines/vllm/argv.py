"""Argv lists for `vllm serve` and `vllm bench serve`, built from typed configs."""

import json
import posixpath
from collections.abc import Sequence

from redline.engines.vllm import flags
from redline.engines.vllm.bench_dataset import HASH_CHUNK
from redline.models import BenchWorkload, ServeConfig

COMMAND = ("vllm",)


def _tristate(name: str, value: bool | None) -> list[str]:
    if value is None:
        return []
    return [f"--{name}" if value else f"--no-{name}"]


def _optional(flag: str, value: object) -> list[str]:
    return [] if value is None else [flag, str(value)]


def serve_argv(config: ServeConfig, executable: Sequence[str] = COMMAND) -> list[str]:
    """The `vllm serve` command for one boot; `executable` is how the host runs vLLM."""
    for flag in config.extra_flags:
        flags.check_owned(flag)
    argv = [*executable, "serve", config.model, "--host", config.host, "--port", str(config.port)]
    argv += ["--max-model-len", str(config.max_model_len)]
    argv += _optional("--max-num-batched-tokens", config.max_num_batched_tokens)
    argv += ["--gpu-memory-utilization", repr(config.gpu_memory_utilization)]
    argv += _optional("--kv-cache-dtype", config.kv_cache_dtype)
    argv += ["--enforce-eager"] if config.enforce_eager else []
    if config.cudagraph_mode is not None:
        argv += ["--compilation-config", json.dumps({"cudagraph_mode": config.cudagraph_mode})]
    argv += _tristate("enable-chunked-prefill", config.enable_chunked_prefill)
    argv += _tristate("enable-prefix-caching", config.enable_prefix_caching)
    argv += _optional("--max-num-seqs", config.max_num_seqs)
    for name in ("tensor", "data", "pipeline"):
        size = getattr(config, f"{name}_parallel_size")
        argv += [f"--{name}-parallel-size", str(size)] if size != 1 else []
    argv += _optional("--load-format", config.load_format)
    return argv + list(config.extra_flags)


def base_url(config: ServeConfig) -> str:
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
    return f"http://{host}:{config.port}"


def bench_argv(
    config: ServeConfig,
    workload: BenchWorkload,
    *,
    result_dir: str,
    result_filename: str,
    executable: Sequence[str] = COMMAND,
    backend: str = "vllm",
    tokenizer: str | None = None,
) -> list[str]:
    """`vllm bench serve` against the server `config` booted: backend pinned, random data.

    backend: vllm by default (the openai default dispatches slower, and a bench must say which); another
    engine's server is benched by this same client under the backend that names it (engines/sglang/argv.py).
    """
    client = ["--backend", backend, "--base-url", base_url(config), "--model", config.model]
    client += ["--tokenizer", tokenizer] if tokenizer else []
    return [
        *executable,
        "bench",
        "serve",
        *client,
        *(_trace_dataset(workload, result_dir) if workload.dataset == "trace" else _random_dataset(workload)),
        "--save-result",
        "--result-dir",
        result_dir,
        "--result-filename",
        result_filename,
    ]


def load_args(w: BenchWorkload) -> list[str]:
    """How the client paces the bench: closed loop at its concurrency, or open loop at its rate (arrivals at that
    mean rate, gamma-shaped by its burstiness; each request's figures saved, so the reader counts the send rate and
    the goodput)."""
    if w.rate is None:
        return ["--max-concurrency", str(w.concurrency)]
    return ["--request-rate", f"{w.rate:g}", "--burstiness", f"{w.burstiness:g}", "--save-detailed"]


def _trace_dataset(w: BenchWorkload, result_dir: str) -> list[str]:
    """A trace bench: the client's timed-trace dataset over the file of its requests beside its result
    (engines/vllm/bench_dataset.py); at the trace's own arrivals (self-timed, each request's figures saved), or its
    lengths paced by the client at a rate or a concurrency."""
    paced = ["--save-detailed"] if w.speedup is not None else ["--no-self-timed", *load_args(w)]
    return [
        "--dataset-name",
        "timed_trace",
        "--dataset-path",
        posixpath.join(result_dir, w.trace_file or ""),
        "--timed-trace-chunk-hash-size",
        str(HASH_CHUNK),
        "--num-prompts",
        str(w.num_prompts),
        *paced,
        *(["--seed", str(w.seed)] if w.seed is not None else []),
        "--ignore-eos",
    ]


def _random_dataset(w: BenchWorkload) -> list[str]:
    """The load a bench sends: random prompts of the workload's lengths, at its concurrency or rate, every output
    full."""
    return [
        "--dataset-name",
        "random",
        "--random-input-len",
        str(w.input_len),
        "--random-output-len",
        str(w.output_len),
        "--num-prompts",
        str(w.num_prompts),
        *load_args(w),
        *(["--seed", str(w.seed)] if w.seed is not None else []),
        *(["--random-range-ratio", str(w.range_ratio)] if w.range_ratio else []),
        *(["--random-prefix-len", str(w.prefix_len)] if w.prefix_len else []),
        "--ignore-eos",
    ]
