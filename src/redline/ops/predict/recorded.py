"""The boots recorded in a workspace, as the memory model learns from them: ladder rungs, campaign cells, A/B trials.

    found = recorded_boots(workspace, "vllm")              # every booted rung, cell and trial of the engine
    record_written(workspace, path, verdict)               # a record just written: indexed, its boots kept read

Each keeps its serve config and its boot signals (an A/B trial its boot log, read again by its engine). A ladder
keeps its model's shape (read on the target at its first boot, or given as a file); a cell's or a trial's comes from
config.json where the model is a folder on this machine. A boot whose model's shape is nowhere to read, or whose
record does not read, is left out and counted, never guessed.

The records are found through the workspace's index (ledger/boots_index.py), which every record written adds to
(`record_written`: the experiment wing for its units, a ladder for its rungs, an adopted ladder), so a plan reads
the records it names and walks no folder; an index that is absent is built from the folders (and kept in the
workspace's state folder, where it has one: a server's). A record read once is not read again while its file is
unchanged (the one just written, never). A record put in by hand joins once the index is deleted (it is rebuilt).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from redline.engines import get_engine
from redline.errors import InputError, RedlineError
from redline.inputs import read_text
from redline.ledger.boots_index import Entry, add_entry, read_index, write_index
from redline.ledger.campaign_file import boot_of, read_verdict
from redline.ledger.ladder_file import read_ladder
from redline.ledger.yamlfile import load_plain
from redline.models.ab import TrialRecord
from redline.models.boot import BootSignals
from redline.models.campaign_results import CellVerdict
from redline.models.ladder import Ladder
from redline.models.memory import GpuSpec, Observation, gpu_spec
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.evidence.context import local_model_files
from redline.ops.request_base import MAX_TEXT
from redline.ops.workspace import inside
from redline.server_config import STATE_DIR

MAX_FILES = 2000  # records read per kind: a workspace is a person's, not a dump
INDEX = f"{STATE_DIR}/recorded-boots.jsonl"  # the workspace's index of its records (the server's own state)
PATTERNS = {"ladder": "ladders/*.yml", "cell": "campaigns/*/cells/*/verdict.yml", "trial": "ab/*/trials/*/trial.yml"}
MAX_KEPT = 4096  # records kept read


@dataclass
class Recorded:
    """The boots of one record (or of a workspace's, for one engine), and what was left out and why."""

    observations: list[Observation] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    engine: str | None = None  # the record's engine (None: an older record that names none)
    shapes: dict[str, ModelShape | None] = field(default_factory=dict)

    def shape(self, model: str) -> ModelShape | None:
        if model not in self.shapes:
            found, _ = local_model_files(model).shape
            self.shapes[model] = found
        return self.shapes[model]

    def add(self, source: str, serve: ServeConfig, engine: str, gpu: GpuSpec | None, signals: BootSignals) -> None:
        if not signals.status.booted:
            return
        shape = self.shape(serve.model)
        if shape is None:
            self.left_out.append(f"{source}: the model's config.json is not readable here")
            return
        self.observations.append(
            Observation(
                source=source,
                architecture=Path(serve.model).name or serve.model,
                shape=shape,
                serve=serve,
                engine=engine,
                engine_version=signals.engine_version,
                gpu=gpu,
                signals=signals,
            )
        )


_KEPT: dict[str, tuple[tuple[int, int, int], Recorded]] = {}  # each record's boots as last read, by its file's stamp


def ladder_gpu(ladder: Ladder) -> GpuSpec | None:
    return gpu_spec(ladder.gpu.name, ladder.gpu.memory_gib) if ladder.gpu else None


def ladder_boots(ladder: Ladder, source: str) -> list[Observation]:
    """A ladder's booted rungs, with the shape the ladder keeps (none without one: nothing to size them by)."""
    if ladder.model.shape is None:
        return []
    return [
        Observation(
            source=f"{source} rung {r.index}",
            architecture=ladder.model.key,
            shape=ladder.model.shape,
            serve=r.serve,
            engine=ladder.engine,
            engine_version=r.signals.engine_version or ladder.engine_version,
            gpu=ladder_gpu(ladder),
            signals=r.signals,
        )
        for r in ladder.rungs
        if r.status.booted
    ]


# ---- one record's boots -------------------------------------------------------------------------------------------


def _of_ladder(ladder: Ladder, name: str) -> Recorded:
    found = Recorded(engine=ladder.engine)
    if ladder.model.shape is not None:
        found.observations += ladder_boots(ladder, name)
        return found
    for rung in ladder.rungs:
        found.add(f"{name} rung {rung.index}", rung.serve, ladder.engine, ladder_gpu(ladder), rung.signals)
    return found


def _of_cell(verdict: CellVerdict, name: str) -> Recorded:
    found, hw = Recorded(engine=verdict.context.engine.name), verdict.context.hardware
    gpu = gpu_spec(hw.gpu_name, hw.gpu_memory_gib)
    found.add(name, verdict.context.serve, verdict.context.engine.name, gpu, verdict.boot.signals)
    return found


def _of_trial(record: TrialRecord, log_text: str | None, name: str, engine: str | None) -> Recorded:
    """A trial's boot, its log read by its engine (`engine` where an older record names none)."""
    found, booted = Recorded(engine=record.engine), record.engine or engine
    if log_text is None or booted is None:
        return found
    try:
        signals = get_engine(booted).parse_boot_log(log_text)
    except RedlineError as exc:
        found.left_out.append(f"{name}: {str(exc).splitlines()[0]}")
        return found
    hw = record.points[0].context.hardware if record.points else None
    found.add(name, record.serve, booted, gpu_spec(hw.gpu_name, hw.gpu_memory_gib) if hw else None, signals)
    return found


def _read(ws: Path, kind: str, path: Path, engine: str | None) -> Recorded:
    """The record's boots, read from its file by its kind (`engine`: the one asked, for an older trial)."""
    name = path.relative_to(ws).as_posix()
    try:
        if kind == "ladder":
            return _of_ladder(read_ladder(path), name)
        if kind == "cell":  # a cell's first boot, or a replicate (cells/<cell>.boot<k>): each read as what it is
            verdict = read_verdict(path.parents[2], *boot_of(path.parent.name))
            return _of_cell(verdict, name) if verdict is not None else Recorded()
        record = TrialRecord.model_validate(load_plain(path))
        log = path.parent / "boot.log"
        text = read_text(log, "a trial's boot log", max_bytes=MAX_TEXT) if log.is_file() else None
        return _of_trial(record, text, name, engine)
    except (RedlineError, ValidationError, OSError) as exc:
        return Recorded(left_out=[f"{name}: {str(exc).splitlines()[0]}"])


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        seen = path.stat()
    except OSError:
        return None
    return seen.st_ino, seen.st_mtime_ns, seen.st_size


def _keep(path: Path, stamp: tuple[int, int, int], found: Recorded) -> Recorded:
    if len(_KEPT) >= MAX_KEPT:
        _KEPT.pop(next(iter(_KEPT)))
    _KEPT[str(path)] = (stamp, found)
    return found


def _boots_of(ws: Path, kind: str, path: Path, engine: str | None = None) -> Recorded | None:
    """The record's boots, read once while its file is unchanged; None where it is gone."""
    stamp = _stamp(path)
    if stamp is None:
        return None
    kept = _KEPT.get(str(path))
    if kept is not None and kept[0] == stamp and (kept[1].engine is not None or engine is None):
        return kept[1]
    found = _read(ws, kind, path, engine)
    return _keep(path, stamp, found) if found.engine is not None else found  # an older trial: read per engine


# ---- the workspace's records --------------------------------------------------------------------------------------


def _inside(ws: Path, name: str) -> Path | None:
    """The record's path, where it stays inside the workspace (the one path checker); None where it leads out."""
    try:
        return inside(ws, name, "a recorded boot")
    except InputError:
        return None


def _scan(ws: Path, left_out: list[str]) -> list[Entry]:
    """Every record of the workspace's folders, by kind (the index built whole: a link out is left out, said so
    without where it leads)."""
    entries = []
    for kind, pattern in PATTERNS.items():
        for path in sorted(ws.glob(pattern))[:MAX_FILES]:
            name = path.relative_to(ws).as_posix()
            if _inside(ws, name) is None:
                left_out.append(f"{name}: it leads outside the workspace")
                continue
            found = _boots_of(ws, kind, path)
            entries.append(Entry(kind, name, found.engine if found is not None else None))
    return entries


def recorded_boots(workspace: Path, engine: str) -> Recorded:
    """Every booted ladder rung, campaign cell and A/B trial of `engine` in the workspace, found by its index."""
    ws, found = workspace.resolve(), Recorded(engine=engine)
    entries = read_index(ws, INDEX)
    if entries is None:
        entries = _scan(ws, found.left_out)
        if (ws / STATE_DIR).is_dir():  # a server's workspace keeps it; a folder a command only reads is left as it is
            write_index(ws, INDEX, entries)
    counted = {kind: 0 for kind in PATTERNS}
    for entry in entries:
        if entry.kind not in counted or entry.engine not in (None, engine) or counted[entry.kind] >= MAX_FILES:
            continue
        counted[entry.kind] += 1
        path = _inside(ws, entry.path)
        if path is None:
            found.left_out.append(f"{entry.path}: it leads outside the workspace")
            continue
        boots = _boots_of(ws, entry.kind, path, engine)
        if boots is not None and boots.engine in (None, engine):
            found.observations += boots.observations
            found.left_out += boots.left_out
    return found


def _matches(name: str, pattern: str) -> bool:
    return len(Path(name).parts) == len(Path(pattern).parts) and Path(name).match(pattern)


def record_written(workspace: Path, path: Path, record: BaseModel, log_text: str | None = None) -> None:
    """A record just written in the workspace (a ladder, a cell's verdict, a trial's record with its boot log): its
    line added to the index, its boots kept read. A record of another kind (no boots the memory model reads), or
    one outside the workspace's folders of records, is not indexed."""
    ws = workspace.resolve()
    try:
        name = path.resolve().relative_to(ws).as_posix()
    except ValueError:
        return
    kind = next((k for k, p in PATTERNS.items() if _matches(name, p)), None)
    stamp = _stamp(path)
    if kind is None or stamp is None:
        return
    if isinstance(record, Ladder) and kind == "ladder":
        found = _of_ladder(record, name)
    elif isinstance(record, CellVerdict) and kind == "cell":
        found = _of_cell(record, name)
    elif isinstance(record, TrialRecord) and kind == "trial" and record.engine is not None:
        found = _of_trial(record, log_text, name, record.engine)
    else:
        return
    _keep(path.resolve(), stamp, found)
    add_entry(ws, INDEX, Entry(kind, name, found.engine))


__all__ = ["INDEX", "Recorded", "ladder_boots", "ladder_gpu", "record_written", "recorded_boots"]
