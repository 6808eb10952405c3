"""campaign.yml and its results folder on disk.

    campaigns/<name>.yml                        the campaign a person (or campaign_init) wrote; comments kept
    campaigns/<name>/cells/<cell>/verdict.yml   one cell's verdict: its presence means the cell is done
    campaigns/<name>/cells/<cell>/boot.log      the server's whole log: boot, warm-up, benches
    campaigns/<name>/cells/<cell>/bench-c<C>.json   each bench's own result file
    campaigns/<name>/cells/<cell>/server.json   a running cell's server, recorded before its boot is waited on
    campaigns/<name>/report.md, *.png           campaign_report

The results folder sits beside the campaign file and is named by the campaign's
`name`. Every file is written whole by the one atomic writer; a verdict is
written last, so a kill leaves a cell either done or not started.
"""

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from redline.errors import InputError, LadderError
from redline.inputs import read_text
from redline.ledger import yamlfile
from redline.ledger.atomic import atomic_write
from redline.ledger.derived import check_file, derived_dir
from redline.ledger.results import Results
from redline.models.campaign import AXES, REPLICATE, Campaign
from redline.models.campaign_results import CellVerdict
from redline.untrusted import CONFIG_YAML_NODES, MAX_YAML_BYTES

_HEADER = (
    "redline campaign: a grid of serve configs over one base, each booted once and benched at every\n"
    "concurrency. Comments you add here are kept. Results go to the folder named by `name`, beside this file."
)
VERDICT = "verdict.yml"
MAX_SIBLINGS = 1000  # campaign files read in one folder to find a name in use


# ---- paths -------------------------------------------------------------------------------------------------


def results_dir(path: Path, campaign: Campaign) -> Path:
    return path.parent / campaign.name


def cells_of(results: Path) -> Results:
    """The campaign's results folder in the one layout of every experiment (ledger/results.py): a folder per cell
    under cells/, its verdict.yml written last, checked from the folder the campaign file is in."""
    return Results(results.parent, results.name, "cells", VERDICT, "campaign.lock", "cell")


def check_results(path: Path, campaign: Campaign) -> None:
    """Refuse a results folder with anything in it that redline would follow or block on: the folder and every
    folder under it must be real folders, every file a plain file (a symlink could carry a verdict, a log or a
    plot out of the workspace; a FIFO would hang a read). It holds a few files per cell, so it is walked whole."""
    results = derived_dir(path.parent, campaign.name)
    for folder, dirs, files in os.walk(results, followlinks=False):  # a link to a folder is listed, not entered
        for name in dirs:
            derived_dir(Path(folder), name)
        for name in files:
            check_file(Path(folder) / name)


# ---- campaign.yml -------------------------------------------------------------------------------------------


def _where(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out


def _problem(error: ErrorDetails) -> str:
    loc, kind, msg = tuple(error["loc"]), error["type"], error["msg"].removeprefix("Value error, ")
    where = _where(loc)
    if kind == "extra_forbidden" and len(loc) >= 2 and loc[0] in ("grid", "cells"):
        return f"{where}: unknown lever {loc[-1]!r}; the levers are {', '.join(AXES)}"
    if kind == "extra_forbidden":
        return f"{where}: unknown field"
    if kind == "too_short" and loc and loc[0] == "grid":
        return f"{where}: no values; give at least one, or drop the lever"
    if not loc:  # a check across fields: its message starts with the field it names
        return msg
    return f"{where}: {msg}"


def _explain(exc: ValidationError) -> str:
    """Every problem in one line, each led by the field it names: `grid.max_num_seqs[1]: ...; ...`."""
    return "; ".join(_problem(e) for e in exc.errors())


def validate(doc: Any, path: Path | str) -> Campaign:
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a campaign (the file must be a YAML mapping of name, target, base, ...)")
    try:
        return Campaign.model_validate(yamlfile.plain(doc))
    except ValidationError as exc:
        raise InputError(f"{path}: {_explain(exc)}") from exc


def _parse(path: Path, keep_comments: bool = False) -> Any:
    if path.is_dir() and path.with_name(f"{path.name}.yml").is_file():  # named without .yml: its results folder
        raise InputError(
            f"campaign {path}: that is the campaign's results folder; "
            f"write its file, the name ending in .yml ({path.name}.yml)"
        )
    text = read_text(path, f"campaign file {path}", max_bytes=MAX_YAML_BYTES)
    try:
        # reading only takes the C loader (about 4x faster); a write reads round-trip, to keep the comments
        parse = yamlfile.parse if keep_comments else yamlfile.parse_plain
        return parse(text, path, CONFIG_YAML_NODES)  # a file a person writes: the smaller budget
    except LadderError as exc:  # the YAML reader's wording, for a campaign
        raise InputError(str(exc)) from exc


def read_campaign(path: Path) -> Campaign:
    """The campaign at path, checked; an InputError naming the field that is wrong."""
    return validate(_parse(path), path)


def dump(campaign: Campaign) -> dict[str, Any]:
    return campaign.model_dump(mode="json", exclude_unset=True, exclude_none=True)


def write_campaign(path: Path, campaign: Campaign, *, replace: bool = False) -> None:
    """Write a new campaign file; with replace, change an existing one in place, keeping its comments."""
    if path.exists() and not replace:
        raise InputError(f"{path}: a campaign is already there; run it, or give another name")
    new = dump(campaign)
    with yamlfile.locked(path):
        if path.exists():
            doc = _parse(path, keep_comments=True)
            doc = yamlfile.merge(doc, yamlfile.plain(doc), new)
        else:
            doc = yamlfile.to_yaml(new)
            doc.yaml_set_start_comment(_HEADER)
        atomic_write(path, yamlfile.dumps(doc))


# ---- verdicts and cell files ---------------------------------------------------------------------------------


def boot_name(cell: str, replicate: int = 1) -> str:
    """The folder of a cell's boot: the cell's name for its first, <cell>.boot<k> for a replicate."""
    return cell if replicate == 1 else f"{cell}.boot{replicate}"


def boot_of(name: str) -> tuple[str, int]:
    """The cell and which of its boots a folder's name is (boot_name read back)."""
    found = REPLICATE.search(name)
    return (name[: found.start()], int(found.group()[5:])) if found else (name, 1)


def read_verdict(results: Path, cell: str, replicate: int = 1) -> CellVerdict | None:
    """The verdict of the cell's boot (its first, or a replicate), None when it has none (that boot is not done)."""
    layout, unit = cells_of(results), boot_name(cell, replicate)
    verdict = layout.read_record(unit, CellVerdict)
    if verdict is not None and (verdict.campaign, verdict.cell, verdict.replicate) != (results.name, cell, replicate):
        path = layout.record_file(unit)
        boot = f" (boot {verdict.replicate})" if (verdict.replicate, replicate) != (1, 1) else ""
        raise InputError(
            f"{path}: a verdict of campaign {verdict.campaign!r}, cell {verdict.cell!r}{boot}, not of this campaign "
            f"({results.name!r}, cell {cell!r}{f' boot {replicate}' if boot else ''}): another campaign's results "
            f"are in this folder; delete {path.parent} to run the cell again"
        )
    return verdict


def read_replicates(results: Path, cells: Iterable[str]) -> dict[str, list[CellVerdict]]:
    """Each cell's replicates on disk (its boots after the first, in order), for the cells that have any."""
    found: dict[str, list[CellVerdict]] = {}
    for cell in cells:
        boots: list[CellVerdict] = []
        while (v := read_verdict(results, cell, len(boots) + 2)) is not None:
            boots.append(v)
        if boots:
            found[cell] = boots
    return found


def read_boots(results: Path, cells: Iterable[str]) -> tuple[dict[str, CellVerdict], dict[str, list[CellVerdict]]]:
    """Every boot's verdict: each cell's first, and the replicates of those booted again."""
    names = list(cells)
    return read_verdicts(results, names), read_replicates(results, names)


def read_verdicts(results: Path, cells: Iterable[str]) -> dict[str, CellVerdict]:
    """The verdicts of these cells; each is checked to be of this campaign (its name is the folder's) and cell."""
    return {name: v for name in cells if (v := read_verdict(results, name)) is not None}


def names_in_use(folder: Path, name: str, besides: Path) -> list[Path]:
    """The campaign files in folder, other than `besides`, whose `name` is name (a file that does not read as a
    campaign is skipped: it names no results folder redline would use)."""
    found = []
    for other in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])[:MAX_SIBLINGS]:
        if other == besides or not other.is_file():
            continue
        try:
            doc = _parse(other)
        except (InputError, OSError):
            continue
        if isinstance(doc, dict) and doc.get("name") == name:
            found.append(other)
    return found
