"""Adopting a ladder climbed elsewhere: copy its ladder.yml and its rung files into the workspace.

    adopted = ladder_adopt(Path("/data/h200/llama8b/ladder.yml"), workspace, LadderAdoptRequest(name="llama8b-h200"))
    adopted.path        # ladders/llama8b-h200.yml, with ladders/llama8b-h200.runs/rung-NNN/ (boot.log, smoke.json)

A ladder's ceiling takes hours of boots on a GPU; one climbed on another machine (or by another redline) is
evidence worth keeping. The source is untrusted input: read size-capped, alias-free and depth-capped, validated
as a ladder, and only the files its rungs name are copied, each from its own rung's folder (`<stem>.runs/
rung-NNN/<file>`, real folders, plain files, size-capped). Their paths are re-based to the new name, and the
ladder records where it came from (`adopted_from`: the file, when, the sha256 of its bytes). Nothing is
replaced: a ladder (or rung folders) already at the destination is refused. Where a source may be read from is
the caller's to decide (the MCP server: inside the workspace or a folder its config's `adopt_from:` names).
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from redline.errors import LadderError, RedlineError
from redline.ledger import yamlfile
from redline.ledger.derived import derived_dir, derived_file
from redline.ledger.ladder_file import create_adopted, rung_file, validate
from redline.models.ladder import AdoptedFrom, Ladder, LadderAdopted, Rung
from redline.ops.ladder.plan import next_of
from redline.ops.predict.recorded import record_written
from redline.ops.request_base import MAX_TEXT
from redline.ops.requests import LadderAdoptRequest
from redline.untrusted import read_regular

LADDERS = "ladders"  # where an adopted ladder goes in the workspace
MAX_ADOPT_BYTES = 256 << 20  # every rung file of one ladder together
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def default_name(ladder: Ladder) -> str:
    """The name an adopted ladder gets when none is given: its model key, in plain characters."""
    return _NOT_NAME.sub("-", ladder.model.key).strip("-._") or "adopted"


def _named(rung: Rung) -> list[tuple[str, str]]:
    """The files a rung names, (what, path relative to the ladder's folder)."""
    named = [("log_file", rung.log_file), ("smoke_test.result_file", rung.smoke_test.result_file)]
    return [(what, path) for what, path in named if path]


def _checked(rung: Rung, what: str, relative: str) -> str:
    """The file's name, once its path is `<stem>.runs/rung-NNN/<file>` of this rung; LadderError otherwise."""
    parts = PurePosixPath(relative).parts
    if len(parts) != 3 or not parts[0].endswith(".runs") or parts[1] != f"rung-{rung.index:03d}":
        raise LadderError(
            f"source: rung {rung.index}'s {what} {relative[:200]!r} is not in its own folder "
            f"(<ladder>.runs/rung-{rung.index:03d}/<file>): it is not a file redline wrote; fix the source ladder"
        )
    if not _FILE.match(parts[2]):
        raise LadderError(f"source: rung {rung.index}'s {what} {relative[:200]!r} has a name redline never writes")
    return parts[2]


def rebased(ladder: Ladder, dest: Path, origin: AdoptedFrom) -> tuple[Ladder, dict[str, str]]:
    """The ladder as adopted at `dest` (each rung file's path under the new name, its origin recorded), and each
    file's old path -> new path."""
    moves: dict[str, str] = {}
    rungs = []
    for rung in ladder.rungs:
        update: dict[str, object] = {}
        for what, old in _named(rung):
            new = rung_file(dest, rung.index, _checked(rung, what, old))
            moves[old] = new
            if what == "log_file":
                update["log_file"] = new
            else:
                update["smoke_test"] = rung.smoke_test.model_copy(update={"result_file": new})
        rungs.append(rung.model_copy(update=update))
    return ladder.model_copy(update={"rungs": rungs, "adopted_from": origin}), moves


def _read_files(source: Path, moves: dict[str, str]) -> dict[str, str]:
    """Each rung file the source names, read from its folder as untrusted input, by its new path."""
    texts, total = {}, 0
    for old, new in moves.items():
        try:
            path = derived_file(source.parent, old)  # its folders real ones, the file a plain one (or absent)
            text = read_regular(path, MAX_TEXT, f"source: {old}", LadderError, nofollow=True)
        except FileNotFoundError:
            raise LadderError(
                f"source: {old}, which the ladder names, is not there: copy the ladder with its "
                f"{PurePosixPath(old).parts[0]} folder, then adopt it"
            ) from None
        except OSError as exc:
            raise LadderError(f"source: {old} cannot be read ({exc.strerror or exc})") from exc
        except RedlineError as exc:
            raise LadderError(f"source: {exc}") from exc
        total += len(text)
        if total > MAX_ADOPT_BYTES:
            raise LadderError(f"source: its rung files are over {MAX_ADOPT_BYTES >> 20} MiB together")
        texts[new] = text
    return texts


def ladder_adopt(source: Path, workspace: Path, request: LadderAdoptRequest) -> LadderAdopted:
    """Copy the ladder at `source` (and the rung files it names) to ladders/<name>.yml in the workspace."""
    text = yamlfile.read(source)  # size-capped; a FIFO or device refused; LadderError if missing
    doc = yamlfile.parse(text, source)  # nodes, aliases, depth, long integers checked first
    ladder = validate(doc, source)
    name = request.name or default_name(ladder)
    dest = derived_dir(workspace, LADDERS, create=True) / f"{name}.yml"  # a real folder, not a link out
    origin = AdoptedFrom(
        path=str(source.resolve()), at=datetime.now(UTC), sha256=hashlib.sha256(text.encode()).hexdigest()
    )
    adopted, moves = rebased(ladder, dest, origin)
    files = _read_files(source, moves)
    create_adopted(dest, doc, adopted, files)
    record_written(workspace, dest, adopted)  # its rungs join the workspace's recorded boots
    return LadderAdopted(
        path=f"{LADDERS}/{dest.name}",
        adopted_from=origin,
        files=[f"{LADDERS}/{new}" for new in files],
        rungs=len(adopted.rungs),
        ceiling=adopted.ceiling,
        next=next_of(dest, adopted),
    )


__all__ = ["LADDERS", "MAX_ADOPT_BYTES", "default_name", "ladder_adopt", "rebased"]
