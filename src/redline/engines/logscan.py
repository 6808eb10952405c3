"""What a boot-log scan collects, whatever the engine: figures set once, and the first line of each status."""

import re
from dataclasses import dataclass, field

from redline.models import BootStatus


@dataclass
class Findings:
    """The engine-neutral part of a scan; each engine's reader adds its own fields and its line cleaner."""

    values: dict[str, object] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    first_line: dict[BootStatus, tuple[int, str]] = field(default_factory=dict)
    generic: set[BootStatus] = field(default_factory=set)  # first_line holds a header, not the cause, so far

    def clean(self, line: str) -> str:
        """A log line without the engine's tags, level and time (each engine's reader says how)."""
        raise NotImplementedError

    def set_once(self, key: str, value: object) -> None:
        self.values.setdefault(key, value)

    def mark(self, status: BootStatus, number: int, line: str, generic: bool = False) -> None:
        """Keep the first line of each status; a specific line replaces a generic header before it."""
        if status in self.first_line and (generic or status not in self.generic):
            return
        self.first_line[status] = (number, self.clean(line))
        if generic:
            self.generic.add(status)
        else:
            self.generic.discard(status)


# pyzmq's words when a Unix socket's path does not fit sockaddr_un (both engines bind their ZeroMQ sockets under the
# temporary folder): `ipc path "<path>" is longer than 107 characters (sizeof(sockaddr_un.sun_path)).`
SOCKET_PATH_NEEDLE = "characters (sizeof(sockaddr_un.sun_path))"
SOCKET_PATH = re.compile(r'ipc path "([^"]{1,4096})" is longer than (\d{1,6}) characters')


def socket_path_too_long(found: re.Match[str]) -> str:
    """A start that failed on its socket path's length, named as such with the fix (docs/security.md, 38.10): the
    line's own words first (a long path elided in its middle), then what to do."""
    path, limit = found.group(1), int(found.group(2))
    shown = path if len(path) <= 150 else f"{path[:110]}...{path[-30:]}"
    return (
        f'ipc path "{shown}" is longer than {limit} characters, a Unix socket\'s limit: the engine binds its sockets '
        f"in its temporary folder; set TMPDIR in the target's env to a folder of at most {limit - 37} characters only "
        "you may write (0700), or give the target a shorter work folder"
    )
