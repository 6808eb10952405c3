"""vLLM's `vllm.benchmarks.serve` interface (add_cli_args, main), over the fake engine's bench."""

import argparse
import sys

from fake_vllm import add_bench_args, bench


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """What the fake models, and the rest of what redline's bench command passes (vLLM's parser knows them all)."""
    add_bench_args(parser)
    for flag in ("--backend", "--tokenizer", "--seed", "--random-range-ratio"):
        parser.add_argument(flag)
    parser.add_argument("--ignore-eos", action="store_true")


def main(args: argparse.Namespace) -> dict[str, object]:
    if bench(args) != 0:
        sys.exit(1)  # as vLLM's raises when its first request fails
    return {}
