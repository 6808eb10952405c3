"""The record of a server an operation left running (a ladder's booted rung awaiting its smoke test, a campaign
cell's or an A/B trial's server while it is measured).

It lets a later call, or a restarted MCP server, find that server and stop it (ops/measured_boot.py
`stop_left_servers`, after `check_reachable` here). Written with the one atomic writer, so a kill never leaves half
a record.
"""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from redline.engines import DEFAULT_ENGINE
from redline.errors import InputError, LadderError
from redline.identity import Owner, where
from redline.ledger.derived import derived_file, derived_write
from redline.models import ServeConfig
from redline.targets import ServerHandle, Target
from redline.untrusted import read_regular

MAX_RECORD = 1 << 20


class ServerRecord(BaseModel):
    """A running server: which rung (or cell) booted it, where, with what engine and config."""

    model_config = ConfigDict(extra="forbid")

    rung_index: int
    engine: str = DEFAULT_ENGINE
    handle: ServerHandle
    config: ServeConfig
    boot_log_bytes: int  # where the boot ended in the log: the bench's lines follow
    # the redline that booted it (absent in older records): a `local` handle names a process of its machine
    owner: Owner | None = None


def _relative(path: Path, base: Path | None) -> tuple[Path, str]:
    """The base the record's folders are checked from (default: the folder above its own, as a ladder's
    <ladder>.runs), and its path below it."""
    base = path.parent.parent if base is None else base
    return base, path.relative_to(base).as_posix()


def _checked(path: Path, base: Path | None = None) -> Path:
    """The record's path, its folders from base down real ones and the file, if there, a plain one."""
    return derived_file(*_relative(path, base))


def load_server(path: Path, base: Path | None = None) -> ServerRecord | None:
    """The record at path, None when there is none."""
    try:
        text = read_regular(_checked(path, base), MAX_RECORD, str(path), LadderError, nofollow=True)
        return ServerRecord.model_validate_json(text)
    except FileNotFoundError:
        return None
    except (ValidationError, OSError) as exc:
        raise LadderError(f"{path} is unreadable ({exc}); stop the server it names by hand and delete it") from exc


def save_server(path: Path, record: ServerRecord, base: Path | None = None) -> None:
    """Write the record, its folders from base down checked right before (ledger/derived.py derived_write)."""
    derived_write(*_relative(path, base), record.model_dump_json(indent=2))


def clear_server(path: Path, base: Path | None = None) -> None:
    _checked(path, base).unlink(missing_ok=True)


def check_reachable(record: ServerRecord, target: Target, what: str, path: Path) -> None:
    """Refuse a recorded server (of `what`: a rung, cell or trial, numbered by the record) whose handle this redline
    cannot act on: another target's, or a `local` one that a redline on another host or in another PID namespace
    booted (its pid names nothing here)."""
    if record.handle.target != target.name:
        raise InputError(
            f"the server of {what} {record.rung_index} runs on target {record.handle.target!r}, not {target.name!r}: "
            f"call this on target {record.handle.target!r}, or stop that server by hand and delete {path}"
        )
    owner = record.owner
    if owner and target.same_host_as_redline and where(owner.host, owner.boot_id, owner.pid_ns) == "elsewhere":
        raise InputError(
            f"the server of {what} {record.rung_index} was booted on target {target.name} by "
            f"{owner.describe()}, another host or PID namespace: its process group is not one this "
            f"redline can see; stop it from there, or by hand and then delete {path}"
        )
