"""search.yml in a campaign's results folder: the search's log, one step per proposal, append-only; written whole
through the one derived writer after every step, so a killed search resumes from it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from redline.errors import InputError
from redline.ledger import yamlfile
from redline.ledger.campaign_file import cells_of
from redline.models.search import SearchLog

SEARCH_LOG = "search.yml"


def read_search_log(results: Path, cells: Collection[str] | None = None) -> SearchLog | None:
    """The search's log, None before its first step; with `cells` (the campaign's), a step naming another cell is
    refused, naming it and the file (a planted or stale log would send the search to a cell it cannot plan)."""
    path = results / SEARCH_LOG
    if not path.exists():
        return None
    hint = f"; delete {path} to start the search again (the cells' verdicts stay)"
    log = yamlfile.load_model(path, SearchLog, "a search log", hint)
    if log.campaign != results.name:
        raise InputError(f"{path}: the search log of campaign {log.campaign!r}, not {results.name!r}{hint}")
    stray = next((s for s in log.steps if cells is not None and s.cell is not None and s.cell not in cells), None)
    if stray is not None:
        raise InputError(
            f"{path}: step {stray.step} names cell {str(stray.cell)[:64]!r}, which campaign {results.name!r} does not "
            f"have{hint}"
        )
    return log


def write_search_log(results: Path, log: SearchLog) -> Path:
    return cells_of(results).write(results / SEARCH_LOG, yamlfile.dumps(yamlfile.to_yaml(log.model_dump(mode="json"))))


__all__ = ["SEARCH_LOG", "read_search_log", "write_search_log"]
