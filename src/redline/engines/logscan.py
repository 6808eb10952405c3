"""What a boot-log scan collects, whatever the engine: figures set once, and the first line of each status."""

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
