"""The model a vLLM boot log served, and how many seconds its boot took, read from the log's text."""

import re
from collections.abc import Iterator
from datetime import datetime

from redline.engines import logtime
from redline.engines.vllm.bootlog import MAX_LINE

_MODEL_ARG = re.compile(r"non-default args: .*?'model': '([^']*)'")
_MODEL_BANNER = re.compile(r"[█▀▄]\s+model\s+(\S+)")
_MODEL_NEEDLES = re.compile(r"non-default args: |[█▀▄][ \t]+model")


def served_model(text: str) -> str | None:
    """The model a boot log served (its path or hub id as given), if the log says."""
    for line in _lines_with(_MODEL_NEEDLES, text):
        for pattern in (_MODEL_ARG, _MODEL_BANNER):
            if m := pattern.search(line):
                return m.group(1)
    return None


def _lines_with(needles: re.Pattern[str], text: str) -> Iterator[str]:
    """The lines (their first MAX_LINE characters) that hold a needle, each once."""
    pos = 0
    while m := needles.search(text, pos):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        yield text[start:end][:MAX_LINE]
        pos = end + 1


_STAMP = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
_READY = ("Starting vLLM", "Application startup complete")


def _stamp(line: str) -> datetime | None:
    m = _STAMP.search(line)
    if not m:
        return None
    month, day, hour, minute, second = map(int, m.groups())
    try:
        return datetime(2000, month, day, hour, minute, second)
    except ValueError:
        return None


def boot_seconds(text: str) -> float | None:
    """Seconds from the log's first timestamp to the ready line (or, for a failed boot, its last timestamp)."""
    return logtime.boot_seconds(text, _stamp, lambda line: any(marker in line for marker in _READY))
