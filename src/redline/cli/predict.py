"""`redline predict --model DIR --max-model-len N [--gpu-name NAME --gpu-memory-gib G] [...] [--workspace W] [--json]`:
what a boot would print about its memory, before it runs (labelled predicted), the same answer memory_predict gives."""

from __future__ import annotations

import argparse

from redline.cli.common import add_workspace_flags, print_result
from redline.cli.flags import add_request_flags, request_from_args
from redline.models.memory import MemoryPrediction
from redline.ops.predict.model_config import given_file
from redline.ops.predict.predict import memory_predict
from redline.ops.requests_predict import MemoryPredictRequest


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "predict", help="predict a boot's memory (weights, activation, KV GiB and tokens) before it runs"
    )
    add_request_flags(parser, MemoryPredictRequest)
    add_workspace_flags(parser)  # its recorded boots calibrate the model too, as the MCP server's workspace does
    parser.set_defaults(handler=_run)


def _gib(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} GiB"


def text(p: MemoryPrediction) -> str:
    """A short table a person reads at a glance."""
    t, gpu = p.terms, f"{p.gpu.name} ({p.gpu.memory_gib:g} GiB)" if p.gpu else "no GPU"
    rows = [
        f"PREDICTED  {p.engine} {p.engine_version or '?'} on {gpu}: {p.architecture or p.model}",
        f"budget     {_gib(t.budget_gib)} of {_gib(t.device_total_gib)}",
        f"weights    {_gib(t.weights_gib)}",
        f"activation {_gib(t.activation_gib)}",
        f"non-torch  {_gib(t.non_torch_gib)}",
        f"cudagraph  {_gib(t.cuda_graph_gib)}",
        f"kv cache   {_gib(t.available_kv_cache_gib)} ± {p.band_gib:.2f} GiB",
        f"kv tokens  {p.kv_cache_tokens:,} ({p.kv_cache_tokens_low:,} to {p.kv_cache_tokens_high:,})",
        f"holds      {p.max_concurrency:g}x at {p.serve.max_model_len:,} tokens; boots: {'yes' if p.boots else 'no'}",
        f"basis      {p.basis}",
    ]
    return "\n".join(rows + [f"warning    {w}" for w in p.warnings])


def _run(args: argparse.Namespace) -> int:
    request = request_from_args(MemoryPredictRequest, args)
    given = given_file(request.model_config_file)
    print_result(args, memory_predict(args.workspace.resolve(), request, given), text)
    return 0
