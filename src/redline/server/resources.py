"""The server's resources: the ladder files of its workspace, as an index and one by one."""

import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from pydantic import BaseModel, Field

from redline.errors import RedlineError
from redline.ops.ladder import plan as ladder_ops
from redline.server.cache import LadderCache
from redline.server.config import LADDER_SUFFIXES, ladder_path, relative_name
from redline.server.toolkit import off_loop
from redline.server_config import ServerConfig
from redline.untrusted import MAX_YAML_BYTES, read_regular

MAX_LISTED_LADDERS = 200


class LadderEntry(BaseModel):
    """One ladder file in the workspace."""

    ladder: str
    model: str
    rungs: int
    next: str = Field(description="The route the ladder is on: run_rung, smoke_test, record_ceiling, diagnose or done")
    ceiling_max_model_len: int | None = None


def _candidates(workspace: Path) -> list[tuple[str, Path]]:
    """YAML files of the workspace outside .redline and the *.runs folders, sorted by path."""
    found = sorted(p for s in LADDER_SUFFIXES for p in workspace.rglob(f"*{s}"))
    named = []
    for path in found:
        if path.resolve().is_relative_to(workspace.resolve()):  # a symlink out of the workspace is not listed
            named.append((relative_name(workspace, path), path))
    return [
        (rel, p)
        for rel, p in named
        if not rel.startswith(".") and not any(part.endswith(".runs") for part in Path(rel).parts)
    ]


def list_ladders(config: ServerConfig, cache: LadderCache) -> list[LadderEntry]:
    """The ladder files of the workspace, sorted by path; files that are not ladders are left out."""
    entries = []
    for rel, path in _candidates(config.workspace):
        try:
            status = cache.get(ladder_ops.ladder_status, path)
        except RedlineError:
            continue  # not a ladder (or a broken one: ladder_status on it says why)
        ceiling = status.ladder.ceiling
        entries.append(
            LadderEntry(
                ladder=rel,
                model=status.ladder.model.key,
                rungs=len(status.rows),
                next=status.next.route,
                ceiling_max_model_len=ceiling and ceiling.max_model_len,
            )
        )
        if len(entries) >= MAX_LISTED_LADDERS:
            break
    return entries


def add_resources(server: MCPServer, config: ServerConfig, cache: LadderCache) -> None:
    @server.resource(
        "redline://ladders",
        name="ladders",
        mime_type="application/json",
        description="The ladder files in the workspace: model, rung count, route, ceiling",
    )
    async def ladders() -> str:
        entries = await off_loop(list_ladders, config, cache)
        return json.dumps([e.model_dump() for e in entries], indent=2)

    @server.resource(
        "redline://ladders/{+name}",
        name="ladder",
        mime_type="application/yaml",
        description="One ladder file as it is on disk (YAML); name is its path inside the workspace",
    )
    async def ladder(name: str) -> str:
        try:
            path = ladder_path(config.workspace, name)
            return await off_loop(read_regular, path, MAX_YAML_BYTES, f"ladder {name!r}")  # a FIFO is not waited on
        except RedlineError as exc:
            raise ResourceError(str(exc)) from exc
        except OSError as exc:
            said = exc.strerror or exc
            raise ResourceError(f"ladder {name!r}: {said}; the redline://ladders resource lists them") from exc
