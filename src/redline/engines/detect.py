"""Which engine printed a log, from lines only that engine prints; None when no engine's, or as many of each.

    detect_engine(text)        # "sglang" for `sglang serve`'s output, "vllm" for `vllm serve`'s, None for neither

Used where a log comes without its engine named (`redline parse-log PATH`, the parse_boot_log tool). Every
signature is a text of the engine's own (a logger's process tag, its arguments dump, its argparse prog, its
module paths in a traceback), never a word another engine's log could hold in passing: "vllm" alone is not
one (an SGLang traceback can name a vLLM package). A new engine adds its row here. Only the first SCANNED
characters are read: every signature comes near the top (the first line, the arguments dump, a traceback of
the start-up), and a 64 MiB log costs no more than a short one.
"""

from __future__ import annotations

SCANNED = 1 << 20

SIGNATURES: dict[str, tuple[str, ...]] = {
    "vllm": (
        "(APIServer pid=",  # the API server's process tag on every line of vLLM >= 0.10
        "(EngineCore",  # the engine core process's tag
        "Initializing a V1 LLM engine",
        "non-default args: ",  # the API server's first line: the arguments given
        "vLLM API server version",
        "usage: vllm ",  # argparse of the top-level `vllm` command
        "vllm: error: ",
        "vllm/entrypoints/",  # module paths in a traceback
        "vllm.entrypoints.",
    ),
    "sglang": (
        "server_args=ServerArgs(",  # srt/entrypoints/engine.py: the arguments dump
        "The server is fired up and ready to roll!",  # srt/entrypoints/http_server.py: ready
        "sglang/srt/",  # module paths in a traceback
        "sglang.launch_server",
        "sglang serve",  # the entrypoint's own name (its argparse prog and its deprecation note)
        "sglang version: ",  # `sglang version`
    ),
}


def signatures_in(text: str) -> dict[str, int]:
    """How many of each engine's signatures the log's first SCANNED characters hold."""
    head = text[:SCANNED]
    return {engine: sum(marker in head for marker in markers) for engine, markers in SIGNATURES.items()}


def detect_engine(text: str) -> str | None:
    """The engine whose signatures the log holds more of than any other's; None when it holds none, or a tie."""
    counts = sorted(signatures_in(text).items(), key=lambda item: item[1], reverse=True)
    (best, most), *rest = counts
    if most == 0 or any(count == most for _, count in rest):
        return None
    return best


__all__ = ["SCANNED", "SIGNATURES", "detect_engine", "signatures_in"]
