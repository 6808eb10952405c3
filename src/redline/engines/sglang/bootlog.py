"""Read an SGLang boot log (0.5.x) into BootSignals.

Written from SGLang 0.5.17's own texts (file and line of each beside its rule) until real
H200 logs are fixtures. SGLang's logger writes `[YYYY-mm-dd HH:MM:SS{ DPn}{ TPn}...] msg`
with no level name; a scheduler's traceback follows "Scheduler hit an exception:" on
lines of its own, without the prefix; tqdm bars run lines together with carriage returns.
Every rule is a cheap substring test before its regex, and only the first MAX_LINE
characters of a line are read, so a crafted log costs linear time.

SGLang's serve log prints no version of its own; `sglang version` (cli/main.py:8) does,
and a run that prints it first gets its version recorded.
"""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from redline.engines import logtime
from redline.engines.logscan import SOCKET_PATH, SOCKET_PATH_NEEDLE, Findings, socket_path_too_long
from redline.engines.model_load import with_model_load
from redline.errors import LogParseError
from redline.models import BootSignals, BootStatus, BootTimings, MemoryBreakdown

# A number starts where no digit or dot stands before it: one regex start per number, not per digit.
_NUM = r"(?<![\d.])(\d+(?:\.\d+)?)"
MAX_LINE = 8192
_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?(?: [^\]]{0,200})?\]\s?")
_ANSI = re.compile(r"\x1b\[[0-9;]{0,20}m")
# A log is SGLang's when it names SGLang's modules, its server args or its parser.
_MARKER = re.compile(r"sglang|SGLang|server_args=ServerArgs\(|The server is fired up and ready to roll")
# `--context-length` and `--chunked-prefill-size` as the server took them
# (srt/entrypoints/engine.py:1059 logs the ServerArgs dataclass repr).
_ARG = re.compile(r"\b(context_length|chunked_prefill_size)=(None|-?\d+)\b")
_FRACTION = re.compile(r"\bmem_fraction_static=(\d+(?:\.\d+)?)\b")
# Off (SGLang's default): the boot compiled nothing. On, SGLang compiles while it captures its CUDA graphs, after its
# KV pool is sized, and says nothing of a cache: the state stays unknown (null).
_TORCH_COMPILE = re.compile(r"\benable_torch_compile=False\b")


def message(line: str) -> str:
    """A log line without its time and rank tag, and without colour codes."""
    return _PREFIX.sub("", _ANSI.sub("", line.strip()), count=1).strip()


@dataclass
class _Scan(Findings):
    pools: dict[str, float] = field(default_factory=dict)  # GiB per cache name (KV, Full KV, SWA KV), first rank only
    graphs: dict[str, float] = field(default_factory=dict)  # GiB per captured phase
    free_gib: float | None = None  # free device memory when the weights began to load (SGLang's "total")
    fraction: float | None = None  # mem_fraction_static as the server resolved it

    def clean(self, line: str) -> str:
        return message(line)


Apply = Callable[[_Scan, re.Match[str], int, str], None]


@dataclass(frozen=True)
class _Rule:
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    apply: Apply


def _r(needles: str | tuple[str, ...], pattern: str, apply: Apply) -> _Rule:
    return _Rule((needles,) if isinstance(needles, str) else needles, re.compile(pattern), apply)


def _status(status: BootStatus, generic: bool = False) -> Apply:
    return lambda scan, _m, number, line: scan.mark(status, number, line, generic)


def _args(scan: _Scan, m: re.Match[str], _n: int, line: str) -> None:
    keys = {"context_length": "max_model_len", "chunked_prefill_size": "max_num_batched_tokens"}
    for name, value in _ARG.findall(line[m.start() :]):
        if value != "None" and int(value) > 0:  # -1: chunked prefill off, no batched-token figure
            scan.set_once(keys[name], int(value))
    if (fraction := _FRACTION.search(line, m.start())) is not None and scan.fraction is None:
        scan.fraction = float(fraction.group(1))
    if _TORCH_COMPILE.search(line, m.start()):
        scan.set_once("compile_cache", "unused")


def _pool(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    name, tokens, k, v, kv = m.groups()
    scan.set_once(f"pool_tokens:{name}", int(tokens))
    gib = float(kv) if kv is not None else float(k) + float(v)
    scan.pools.setdefault(name, gib)


def _scheduler(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    total, chunk, context = m.groups()
    scan.set_once("kv_cache_tokens", int(total))
    if chunk != "None" and int(chunk) > 0:
        scan.set_once("max_num_batched_tokens", int(chunk))
    scan.set_once("max_model_len", int(context))


def _weights(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    scan.timings.setdefault("model_load_s", float(m.group(1)))
    scan.memory.setdefault("weights_gib", float(m.group(2)))


def _free(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    if scan.free_gib is None:
        scan.free_gib = float(m.group(1))


def _graph(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    scan.graphs.setdefault(m.group(1), float(m.group(2)))


def _context_length(scan: _Scan, _m: re.Match[str], number: int, line: str) -> None:
    if "To allow overriding this maximum" in line:  # raised: without the env var SGLang refuses the boot
        scan.mark(BootStatus.CRASH_CONFIG, number, line)
    else:  # SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1: only warned
        _warning(scan, _m, number, line)


def _warning(scan: _Scan, _m: re.Match[str], _n: int, line: str) -> None:
    text = message(line)
    if text not in scan.warnings and len(scan.warnings) < 100:
        scan.warnings.append(text)


_RULES: tuple[_Rule, ...] = (
    # cli/main.py:8, printed by `sglang version` when a run script prints it before the server starts
    _r(
        "sglang version: ",
        r"sglang version: (\d+\.\d+\.\d+[\w.+-]{0,40})",
        lambda s, m, _n, _l: s.set_once("engine_version", m.group(1)),
    ),
    # srt/entrypoints/engine.py:1059: logger.info(f"{server_args=}")
    _r("server_args=ServerArgs(", r"server_args=ServerArgs\(", _args),
    # srt/model_executor/model_runner.py: before loading, what the pool budget is a fraction of
    _r("Load weight begin.", r"Load weight begin\. avail mem=" + _NUM + " GB", _free),
    # srt/model_executor/model_runner.py:1100
    _r("Load weight end.", r"Load weight end\. elapsed=" + _NUM + r" s, .{0,400}?mem usage=" + _NUM + " GB", _weights),
    _r("load_format=", r"\bload_format='(\w+)'", lambda scan, m, _n, _l: scan.set_once("load_format", m.group(1))),
    # srt/mem_cache/memory_pool.py:1670 (K and V) and :1678 (MLA); 0.5.5-0.5.11 print no `dtype: ...,`
    _r(
        "KV Cache ",
        r"\b((?:Full |SWA )?KV Cache) (?:is allocated|VA upper bound)\. (?:dtype: \S{1,40}, )?"
        r"#tokens: (\d+), (?:K size: ([\d.]{1,20}) GB, V size: ([\d.]{1,20}) GB|KV size: ([\d.]{1,20}) GB)",
        _pool,
    ),
    # srt/managers/scheduler.py:1069, TP0 only
    _r(
        "max_total_num_tokens=",
        r"max_total_num_tokens=(\d+), chunked_prefill_size=(-?\d+|None), "
        r"max_prefill_tokens=[^,\s]{1,20}, max_running_requests=[^,\s]{1,20}, "
        r"context_len=(\d+)",
        _scheduler,
    ),
    # srt/model_executor/model_runner_components/cuda_graph_setup.py:374 and :453
    _r(
        "CUDA graph end.",
        r"Capture target (decode|prefill|verify) CUDA graph end\. elapsed=[\d.]{1,20} s, mem usage=" + _NUM + " GB",
        _graph,
    ),
    # Failures.
    # srt/model_executor/pool_configurator.py:64 and srt/mem_cache/kv_cache_configurator.py:1648
    _r(
        "Not enough memory. Please try to increase --mem-fraction-static",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        _status(BootStatus.OOM_KV_CACHE),
    ),
    _r(
        "leave no GPU memory for the KV cache",
        r"leave no GPU memory for the KV cache",
        _status(BootStatus.OOM_KV_CACHE),
    ),
    # srt/managers/tp_worker.py:413, and srt/mem_cache/allocation.py:240/:527 when a warm-up batch finds no room
    _r(
        ("Memory pool size is too small", "out of memory. Try to lower your batch size"),
        r"Memory pool size is too small|(?:Prefill|Decode) out of memory\. Try to lower your batch size",
        _status(BootStatus.OOM_KV_CACHE),
    ),
    # srt/model_executor/runner/decode_cuda_graph_runner.py:418 wraps torch's allocator error during capture
    _r(
        ("out of memory", "OutOfMemory"),
        r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory",
        _status(BootStatus.OOM_CUDA),
    ),
    _r(
        ("Error", "undefined symbol"),
        r"\b(?:ModuleNotFoundError|ImportError)\b|undefined symbol",
        _status(BootStatus.CRASH_IMPORT),
    ),
    # srt/utils/common.py:1966/:1972, assert_pkg_version: sglang-kernel or flashinfer missing or too old
    _r(
        ("is installed with version", "is not installed."),
        r"is installed with version \S{1,40}, which is less than the minimum required version|"
        r"with minimum required version \S{1,40} is not installed",
        _status(BootStatus.CRASH_IMPORT),
    ),
    # argparse (srt/server_args.py:9355, prog "sglang serve")
    _r(
        "error: ",
        r"\berror: (?:unrecognized arguments|argument |invalid choice|the following arguments are required)",
        _status(BootStatus.CRASH_CONFIG),
    ),
    # srt/configs/model_config.py:775: a ValueError unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set
    _r(
        "is greater than the derived context_length",
        r"context_length \(\d+\) is greater than the derived context_length \(\d+\)",
        _context_length,
    ),
    _r(
        ("No CUDA GPUs", "ddress already in use", "driver", "is not available in"),
        r"No CUDA GPUs are available|[Aa]ddress already in use|CUDA driver version is insufficient|"
        r"driver on your system is too old|at \d+ is not available in \d+ seconds",
        _status(BootStatus.CRASH_ENV),
    ),
    # pyzmq's, for the ZeroMQ sockets SGLang binds in its temporary folder (docs/security.md, 38.10)
    _r(
        SOCKET_PATH_NEEDLE,
        SOCKET_PATH.pattern,
        lambda scan, m, n, _l: scan.mark(BootStatus.CRASH_ENV, n, socket_path_too_long(m)),
    ),
    # srt/entrypoints/engine.py:1681: the cause is unknown, the exit code and the OOM-killer hint are in the line
    _r(
        "scheduler died during initialization",
        r"scheduler died during initialization",
        _status(BootStatus.CRASH_UNKNOWN),
    ),
    # A traceback's last line names the exception: the first one is the cause when nothing above explains it
    _r(
        ("Error: ", "Exception: "),
        r"^(?:[A-Za-z_][\w.]{0,100})?(?:Error|Exception): ",
        _status(BootStatus.CRASH_UNKNOWN),
    ),
    # Headers: the line after them says why (srt/managers/scheduler.py:4951, srt/entrypoints/engine.py:1651/:1707,
    # srt/entrypoints/http_server.py:2324)
    _r(
        ("Scheduler hit an exception", "Received sigquit", "Initialization failed", "Traceback"),
        r"Scheduler hit an exception|Received sigquit from a child process|Initialization failed\.|"
        r"^\S{0,40}Traceback \(most recent call last\)",
        _status(BootStatus.CRASH_UNKNOWN, generic=True),
    ),
    # srt/mem_cache/kv_cache_configurator.py:1702, and print_deprecated_warning (srt/arg_groups/argparse_actions.py)
    _r(
        ("larger than the profiled value", "is deprecated", "Warning:"),
        r"larger than the profiled value|is deprecated|\bWarning: ",
        _warning,
    ),
    # srt/entrypoints/http_server.py:2355, after the warm-up request passed
    _r(
        "The server is fired up and ready to roll!",
        r"The server is fired up and ready to roll!",
        _status(BootStatus.BOOT_OK),
    ),
)

_ANY_NEEDLE = re.compile("|".join(re.escape(n) for n in sorted({n for r in _RULES for n in r.needles})))
_PRECEDENCE = (
    BootStatus.BOOT_OK,
    BootStatus.OOM_KV_CACHE,
    BootStatus.OOM_CUDA,
    BootStatus.CRASH_IMPORT,
    BootStatus.CRASH_CONFIG,
    BootStatus.CRASH_ENV,
    BootStatus.CRASH_UNKNOWN,
)


def _lines_with(needles: re.Pattern[str], text: str) -> Iterator[tuple[int, str]]:
    """(line number, part) of each line holding a needle, its first MAX_LINE characters, split at a lone \\r."""
    number, counted_to, pos = 1, 0, 0
    while m := needles.search(text, pos):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        number += text.count("\n", counted_to, start)
        counted_to = start
        for part in text[start : min(end, start + MAX_LINE)].split("\r"):
            if part:
                yield number, part
        pos = end + 1


def _scan(text: str) -> _Scan:
    scan = _Scan()
    for number, line in _lines_with(_ANY_NEEDLE, text):
        for rule in _RULES:
            if any(n in line for n in rule.needles) and (m := rule.pattern.search(line)):
                rule.apply(scan, m, number, line)
    return scan


def _decide(scan: _Scan, text: str) -> tuple[BootStatus, str]:
    for status in _PRECEDENCE:
        if status in scan.first_line:
            number, line = scan.first_line[status]
            return status, f"line {number}: {line[:400]}"
    last = text.rstrip("\r\n").count("\n") + 1 if text.strip() else 0
    return BootStatus.BOOT_INCOMPLETE, f"the log ends at line {last} before the server was ready and without an error"


def _pool_figures(scan: _Scan, values: dict[str, object]) -> None:
    """KV tokens: the scheduler's max_total_num_tokens, else the full-attention pool; GiB: every pool of one rank."""
    for name in ("KV Cache", "Full KV Cache"):
        tokens = values.pop(f"pool_tokens:{name}", None)
        if tokens is not None:
            values.setdefault("kv_cache_tokens", tokens)
    values.pop("pool_tokens:SWA KV Cache", None)
    if scan.pools:
        values["available_kv_cache_gib"] = round(sum(scan.pools.values()), 2)


def _memory(scan: _Scan) -> dict[str, float]:
    """Weights, graphs, and the budget SGLang gave weights and KV pool: mem_fraction_static of the memory free
    when the weights began to load (its `total_gpu_memory`; weights + pools come to it, less what it rounds)."""
    memory = dict(scan.memory)
    if scan.graphs:
        memory["cudagraph_gib"] = round(sum(scan.graphs.values()), 2)
    if scan.free_gib is not None and scan.fraction is not None:
        memory["requested_gib"] = round(scan.free_gib * scan.fraction, 2)
    return memory


def parse_boot_log(text: str) -> BootSignals:
    """Every signal an SGLang boot log gives, and how the boot ended (with the deciding line)."""
    if _MARKER.search(text) is None:
        raise LogParseError(
            "this is not an SGLang boot log: no SGLang line found "
            "(pass the full output of `python -m sglang.launch_server`)"
        )
    scan = _scan(text)
    status, reason = _decide(scan, text)
    values = dict(scan.values)
    _pool_figures(scan, values)
    memory = _memory(scan)
    signals = BootSignals.model_validate(
        {
            "engine": "sglang",
            "status": status,
            "reason": reason,
            "memory": MemoryBreakdown(**memory),
            "timings": BootTimings(**scan.timings),
            "warnings": scan.warnings,
            **values,
        }
    )
    return with_model_load(signals)


_MODEL = re.compile(r"server_args=ServerArgs\(model_path=(?:'([^'\n]{0,4096})'|\"([^\"\n]{0,4096})\")")
_MODEL_NEEDLE = re.compile(re.escape("server_args=ServerArgs(model_path="))


def served_model(text: str) -> str | None:
    """The model a boot log served (its path or hub id as given), if the log says."""
    for _n, line in _lines_with(_MODEL_NEEDLE, text):
        if m := _MODEL.search(line):
            return m.group(1) if m.group(1) is not None else m.group(2)
    return None


_STAMP = re.compile(r"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
_READY = "The server is fired up and ready to roll!"


def _stamp(line: str) -> datetime | None:
    m = _STAMP.match(line)
    if not m:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups())
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


def boot_seconds(text: str) -> float | None:
    """Seconds from the log's first timestamp to the ready line (or, for a failed boot, its last timestamp)."""
    return logtime.boot_seconds(text, _stamp, lambda line: _READY in line)
