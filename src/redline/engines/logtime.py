"""How long a boot took, from the timestamps its log printed: the rule both engines' readers share."""

from collections.abc import Callable
from datetime import datetime


def boot_seconds(text: str, stamp: Callable[[str], datetime | None], ready: Callable[[str], bool]) -> float | None:
    """Seconds from the log's first timestamp to its ready line (or, for a failed boot, its last timestamp)."""
    first = end = None
    for line in text.splitlines():
        if (when := stamp(line)) is None:
            continue
        first = first or when
        end = when
        if ready(line):
            break
    if first is None or end is None or end < first:
        return None
    return (end - first).total_seconds()
