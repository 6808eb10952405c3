"""The job files of one workspace: `<id>.json` each, written whole and renamed into place, and whose they are.

A job file names its owner: host, boot, PID namespace, pid and start time
(redline.identity). A job whose owner runs on another host or in another PID
namespace is never judged from here: never marked interrupted, its servers never
stopped, its target and ladder busy until its own server ends it.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import anyio
from pydantic import ValidationError

from redline.errors import InputError
from redline.identity import this_owner
from redline.ledger.atomic import atomic_write
from redline.ledger.derived import check_file, derived_dir
from redline.ops.request_base import JobState
from redline.server.job_record import JobRecord, start_ticks
from redline.untrusted import read_regular

__all__ = ["JOB_ID_RE", "MAX_JOB_FILE", "JobFiles", "Records"]

_log = logging.getLogger("redline.server.jobs")

JOB_ID_RE = re.compile(r"^j-\d{8}T\d{6}Z-[0-9a-f]{8}$")
MAX_JOB_FILE = 16 << 20  # a job file holds a result and a few handles: far less
Records = list[JobRecord]  # `list` inside JobFiles is its method


class JobFiles:
    """The job files of one workspace, read and written; Jobs adds the jobs this server process runs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.owner = this_owner()
        self._pid = self.owner.pid
        self._ticks = self.owner.start_ticks
        # the job folder and the server's state folder above it are derived: real folders, never symlinks
        derived_dir(root.parent.parent, root.parent.name, root.name, create=True)

    def _live_record(self, job_id: str) -> JobRecord | None:
        """The record of a job this server process runs (Jobs), else None: then its file is the record."""
        return None

    # ---- the files -----------------------------------------------------------------

    def _path(self, job_id: str) -> Path:
        if not isinstance(job_id, str) or not JOB_ID_RE.match(job_id):
            raise InputError(
                f"{str(job_id)[:80]!r} is not a job id (they look like j-20261130T101500Z-1a2b3c4d); "
                "job_list shows them"
            )
        return self.root / f"{job_id}.json"

    def _save(self, record: JobRecord) -> None:
        path = self._path(record.id)
        try:
            derived_dir(self.root.parent, self.root.name)  # still a real folder, not a symlink out
            check_file(path)
            atomic_write(path, record.model_dump_json(indent=2))
        except OSError as exc:
            raise InputError(f"cannot write job file {path}: {exc.strerror or exc}") from exc

    def _load(self, path: Path) -> JobRecord:
        try:
            text = read_regular(path, MAX_JOB_FILE, f"job file {path}", nofollow=True)
            return JobRecord.model_validate_json(text)
        except FileNotFoundError as exc:
            raise InputError(f"no job {path.stem} in this workspace; job_list shows the jobs there are") from exc
        except (OSError, ValidationError) as exc:
            raise InputError(f"job file {path} is unreadable ({type(exc).__name__}); delete it") from exc

    def get(self, job_id: str) -> JobRecord:
        """A job by id: the live one if this process runs it, else its file."""
        path = self._path(job_id)
        live = self._live_record(job_id)
        return live.model_copy(deep=True) if live is not None else self._load(path)

    async def _get(self, job_id: str) -> JobRecord:
        """get(), with the file read off the event loop."""
        return await anyio.to_thread.run_sync(self.get, job_id)

    def list(self, *, state: JobState | None = None, limit: int = 20) -> Records:
        """Newest first."""
        records = []
        for path in self.root.glob("j-*.json"):
            live = self._live_record(path.stem)
            try:
                records.append(live.model_copy(deep=True) if live is not None else self._load(path))
            except InputError as exc:
                _log.warning("skipping %s", exc)
        records = [r for r in records if state is None or r.state == state]
        return sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)[:limit]

    # ---- the owner ----------------------------------------------------------------

    def _owner_alive(self, record: JobRecord) -> bool:
        """Whether the server that runs the job may still run it. One on another host or in another PID
        namespace is taken as alive: its pid means nothing here, so it is never judged from here."""
        where = record.owner_where()
        if where != "here":
            return where == "elsewhere"  # "gone": this machine, booted again since
        if record.owner_pid == self._pid and record.owner_start_ticks == self._ticks:
            return True  # another Jobs in this very process (tests run several servers)
        ticks = start_ticks(record.owner_pid)
        return ticks is not None and (record.owner_start_ticks is None or ticks == record.owner_start_ticks)

    def _owner_text(self, record: JobRecord) -> str:
        if record.owner_where() == "elsewhere":
            return (
                f"({record.owner.describe()}), on another host or in another PID namespace, where this server "
                "cannot look"
            )
        return f"(pid {record.owner_pid}) that is still alive"

    def _gone_hint(self, record: JobRecord) -> str:
        if record.owner_where() != "elsewhere":
            return ""
        return (
            f"; if that server is gone for good, stop what the job started there by hand, then delete "
            f"{self._path(record.id)}"
        )

    def _orphaned(self, record: JobRecord) -> bool:
        return record.active and self._live_record(record.id) is None and not self._owner_alive(record)
