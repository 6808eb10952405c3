"""One exception tree for redline.

    RedlineError                 anything redline reports to a person or an agent
    ├── InputError               bad input: a value, a file or a flag to fix
    │   └── DerivedPathError     a derived folder or file (`<ladder>.runs`, `.redline/jobs`) that is a link or FIFO
    ├── LogParseError            a text that is not the engine's boot log
    ├── LadderError              a ladder.yml that cannot be used as it is
    ├── RunFailed                a run whose every trial or cell failed: its result (on disk too) names the cause
    └── TargetError              a target that failed to start, run, read or stop something
        ├── TargetConfigError    (also an InputError) a targets file or target name to fix
        ├── TargetUnreachable, HostKeyRejected, TargetAuthRejected   SSH
        ├── TargetPathError      a file or folder on the target
        ├── TargetBusy           another server redline started still holds the target
        └── CommandTimeout       a command past its timeout

Every message says what to do next. Foreign errors (OSError, YAML, SSH) are
translated where they enter, with ``raise ... from exc``.
"""

from pydantic import BaseModel


class RedlineError(Exception):
    """Base of every error redline raises on purpose."""


class InputError(RedlineError):
    """A value, file or flag given to redline that it cannot use."""


class LogParseError(RedlineError):
    """A text that is not the engine's boot log (or cannot be read)."""


class LadderError(RedlineError):
    """A ladder file that is missing, invalid, or asked to do something out of order."""


class RunFailed(RedlineError):
    """A run that measured nothing usable: every trial (or every cell) it ran failed. `result` is the answer it would
    have given, naming the cause and the fix; its job ends failed and keeps it."""

    def __init__(self, message: str, result: BaseModel | None = None) -> None:
        super().__init__(message)
        self.result = result


class TargetError(RedlineError):
    """A target (this host or an SSH host) that failed to start, run, read or stop something."""


class TargetConfigError(TargetError, InputError):
    """A targets file, or a target name, that cannot be used as it is."""


class TargetUnreachable(TargetError):
    """An SSH target that cannot be connected to (refused, timed out, no route, lost)."""


class HostKeyRejected(TargetError):
    """An SSH host whose key is missing from, or differs from, the known_hosts file."""


class TargetAuthRejected(TargetError):
    """An SSH host that refused the configured user and key."""


class TargetPathError(TargetError):
    """A file or folder on a target that does not exist or cannot be read or written."""


class TargetBusy(TargetError):
    """A target that still runs a server redline started: one server per target holds its GPU and port."""


class CommandTimeout(TargetError):
    """A command run on a target that did not finish within its timeout."""


class DerivedPathError(InputError):
    """A folder or file redline derives itself (a ladder's runs, the job folder) that is a symlink, FIFO or device."""
