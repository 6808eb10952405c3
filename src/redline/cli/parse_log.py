"""`redline parse-log PATH [--engine E] [--json]`: what an engine's boot log says."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from redline.cli.flags import add_request_flags, request_from_args
from redline.engines import get_engine
from redline.inputs import read_text
from redline.models import BootSignals
from redline.ops.requests import ParseBootLogRequest


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("parse-log", help="read an engine's boot log: KV cache, concurrency, memory, status")
    parser.add_argument("path", type=Path, help="the boot log (the engine's full serve log)")
    add_request_flags(parser, ParseBootLogRequest, skip=("text",))  # the text is read from PATH
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=_run)


def summary(signals: BootSignals) -> str:
    """A few lines a person reads at a glance."""

    def figure(value: object, unit: str = "") -> str:
        return "-" if value is None else f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"

    lines = [
        f"status      {signals.status.value}  ({signals.engine} {signals.engine_version or '?'})",
        f"reason      {signals.reason}",
        f"requested   max_model_len {figure(signals.max_model_len)}, "
        f"max_num_batched_tokens {figure(signals.max_num_batched_tokens)}",
        f"kv cache    {figure(signals.available_kv_cache_gib, ' GiB')}, {figure(signals.kv_cache_tokens)} tokens",
    ]
    if signals.max_concurrency is not None:
        lines.append(f"concurrency {signals.max_concurrency}x at {signals.max_concurrency_tokens:,} tokens per request")
    if signals.estimated_max_model_len is not None:
        lines.append(
            f"fits        estimated max model length {signals.estimated_max_model_len:,} "
            f"(needed {figure(signals.kv_cache_needed_gib, ' GiB')})"
        )
    if memory := memory_line(signals):
        lines.append(f"memory      {memory}")
    if signals.compile_cache is not None:
        lines.append(f"compile     torch.compile cache {signals.compile_cache}")
    lines += [f"warning     {w}" for w in signals.warnings]
    return "\n".join(lines)


def memory_line(signals: BootSignals) -> str:
    """The memory figures the log gave (vLLM's activation and non-torch, SGLang's weights and graphs only), then
    the budget they come out of; "" when it gave none."""
    m = signals.memory
    named = (("weights", m.weights_gib), ("activation", m.peak_activation_gib), ("non-torch", m.non_torch_gib))
    parts = [f"{name} {value} GiB" for name, value in (*named, ("cudagraph", m.cudagraph_gib)) if value is not None]
    if m.requested_gib is not None:
        device = "" if m.device_total_gib is None else f" of {m.device_total_gib} GiB"
        parts.append(f"requested {m.requested_gib} GiB{device}")
    return ", ".join(parts)


def _run(args: argparse.Namespace) -> int:
    request = request_from_args(ParseBootLogRequest, args, text=read_text(args.path))
    signals = get_engine(request.engine).parse_boot_log(request.text)
    print(json.dumps(signals.model_dump(mode="json")) if args.json else summary(signals))
    return 0
