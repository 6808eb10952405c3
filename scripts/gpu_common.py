"""What the GPU scripts (gpu-climb.py, gpu-campaign.py, gpu-ab.py) share: the engines' environment on the lent
H200, a progress line, and each engine's command on that host."""

import argparse
import time

# FlashInfer is not in the H200 carry: its sampler is switched off; no network, no usage reports.
ENGINE_ENV = {"VLLM_USE_FLASHINFER_SAMPLER": "0", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}


async def progress(fraction: float, text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')} {fraction:4.0%}] {text}", flush=True)


def engine_commands(texts: list[str]) -> dict[str, list[str]]:
    """`--engine-command ENGINE=COMMAND` options as a target's engine_commands."""
    out = {}
    for text in texts:
        engine, sep, command = text.partition("=")
        if not sep or not engine or not command.split():
            raise SystemExit(f"--engine-command {text!r}: write ENGINE=COMMAND, e.g. 'sglang=sglang-server'")
        out[engine] = command.split()
    return out


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """--stop-after (a device call's limit; the next run resumes) and --engine-command, as every script takes them."""
    parser.add_argument("--stop-after", type=float, default=1e9, help="seconds before the run stops itself")
    parser.add_argument(
        "--engine-command",
        action="append",
        default=[],
        metavar="ENGINE=COMMAND",
        help="an engine's command on this host, e.g. 'sglang=sglang-python -m sglang.launch_server'",
    )
