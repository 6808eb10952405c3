"""The record of a server an operation left running (a ladder's booted rung awaiting its smoke test).

It lets a later call, or a restarted MCP server, find that server and stop it.
Written with the one atomic writer, so a kill never leaves half a record.
"""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from redline.engines import DEFAULT_ENGINE
from redline.errors import LadderError
from redline.identity import Owner
from redline.ledger.atomic import atomic_write
from redline.ledger.derived import derived_file
from redline.models import ServeConfig
from redline.targets import ServerHandle
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


def _checked(path: Path, *, create: bool = False) -> Path:
    """The record's path, its folder (<ladder>.runs) a real one and the file, if there, a plain one."""
    return derived_file(path.parent.parent, f"{path.parent.name}/{path.name}", create=create)


def load_server(path: Path) -> ServerRecord | None:
    """The record at path, None when there is none."""
    try:
        text = read_regular(_checked(path), MAX_RECORD, str(path), LadderError, nofollow=True)
        return ServerRecord.model_validate_json(text)
    except FileNotFoundError:
        return None
    except (ValidationError, OSError) as exc:
        raise LadderError(f"{path} is unreadable ({exc}); stop the server it names by hand and delete it") from exc


def save_server(path: Path, record: ServerRecord) -> None:
    atomic_write(_checked(path, create=True), record.model_dump_json(indent=2))


def clear_server(path: Path) -> None:
    _checked(path).unlink(missing_ok=True)
