#!/usr/bin/env python3
"""A fast stand-in for SGLang 0.5.17's server (`sglang serve`), for campaigns and A/Bs across engines in tests.

    fake_sglang.py serve --model-path M --host H --port P --context-length N [--chunked-prefill-size C] [...]
    fake_sglang.py version                       # what `sglang version` prints: sglang version: 0.5.17

SGLang has no CPU build here, so this double prints SGLang's own boot-log texts (tests/engines/sglang_excerpts.py,
written line by line from the f-strings in its wheel; real H200 logs land in tests/data/sglang-0.5.17-h200/) with the
figures the command asks for, then serves GET /health and POST /v1/completions until SIGTERM. It is benched, as
the real one is, by the vLLM client: tests/server/fake_vllm.py `bench serve`, whose request it answers the way
fake_vllm's server does.

Environment (the target's engine env):
    FAKE_VLLM_BOOT_S       seconds a boot takes before the server answers (default 0.2), as fake_vllm's
    FAKE_SGLANG_SPEEDUP    how much faster than fake_vllm's server this one decodes under FAKE_VLLM_DECODE_MODEL=1
                           (default 1: the same); the figures fake_vllm's bench works out follow it
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.engines is importable

from tests.engines import sglang_excerpts as x  # noqa: E402
from tests.server.fake_vllm import JsonHandler  # noqa: E402

VERSION = "0.5.17"
POOL_TOKENS = 242_360  # the H200 excerpt's pool


def _say(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _handler(args: argparse.Namespace) -> type[BaseHTTPRequestHandler]:
    speedup = float(os.environ.get("FAKE_SGLANG_SPEEDUP") or 1)

    class Handler(JsonHandler):
        def log_message(self, fmt: str, *a: object) -> None:  # uvicorn's access line, as SGLang's log has it
            code = a[1] if len(a) > 1 else ""
            _say(
                f'{x.stamp(96)}INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.requestline}" {code}\n'
            )

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            prompt, out = int(body.get("prompt_tokens", 1)), int(body.get("max_tokens", 1))
            if prompt + out > args.context_length:
                message = f"Requested token count exceeds the model's maximum context length of {args.context_length}"
                self._send(400, {"object": "error", "message": message})
                return
            server = {"max_num_batched_tokens": args.chunked_prefill_size, "pid": os.getpid(), "speedup": speedup}
            self._send(
                200,
                {
                    "choices": [{"text": "x" * out}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": out},
                    "server": server,
                },
            )

    return Handler


def serve(args: argparse.Namespace) -> int:
    _say(x.head(args.model_path, args.context_length, args.chunked_prefill_size).removeprefix(x.LAUNCH_WARNING))
    time.sleep(float(os.environ.get("FAKE_VLLM_BOOT_S", "0.2")))
    tokens = POOL_TOKENS
    _say(x.kv_line(tokens, 29.59, 29.59) + x.pool_end() + x.graphs())
    _say(x.scheduler(tokens, args.context_length, args.chunked_prefill_size, args.max_running_requests or 3786))
    try:
        server = ThreadingHTTPServer((args.host, args.port), _handler(args))
    except OSError as exc:
        _say(f"{x.stamp(92)}ERROR:    [Errno {exc.errno}] error while attempting to bind on address: {exc.strerror}\n")
        return 1
    _say(x.serving().replace("http://127.0.0.1:8000", f"http://{args.host}:{args.port}"))

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever(poll_interval=0.05)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["version"]:
        print(f"sglang version: {VERSION}")
        return 0
    parser = argparse.ArgumentParser(prog="sglang serve")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--context-length", type=int, default=32768)
    parser.add_argument("--chunked-prefill-size", type=int, default=8192)
    parser.add_argument("--max-running-requests", type=int)
    args, _ = parser.parse_known_args(argv)  # flags the fake does not model (--disable-radix-cache ...) are ignored
    return serve(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
