"""The boots recorded in a workspace, as the memory model learns from them: ladder rungs, campaign cells, A/B trials.

Each keeps its serve config and its boot signals (an A/B trial its boot log, read again by its engine). A ladder
keeps its model's shape (read on the target at its first boot, or given as a file); a cell's or a trial's comes from
config.json where the model is a folder on this machine. A boot whose model's shape is nowhere to read, or whose
record does not read, is left out and counted, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from redline.engines import get_engine
from redline.errors import InputError, RedlineError
from redline.inputs import read_text
from redline.ledger.campaign_file import read_verdict
from redline.ledger.ladder_file import read_ladder
from redline.ledger.yamlfile import load_plain
from redline.models.ab import TrialRecord
from redline.models.boot import BootSignals
from redline.models.ladder import Ladder
from redline.models.memory import GpuSpec, Observation, gpu_spec
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape
from redline.ops.evidence.context import local_model_files
from redline.ops.request_base import MAX_TEXT
from redline.ops.workspace import inside

MAX_FILES = 2000  # records read per kind: a workspace is a person's, not a dump


@dataclass
class Recorded:
    """The workspace's boots of one engine, and what was left out and why."""

    observations: list[Observation] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
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


def _files(ws: Path, pattern: str, found: Recorded) -> list[Path]:
    """The workspace's files of a pattern that stay inside it (the one path checker: a link out is left out, said
    so without where it leads)."""
    kept = []
    for path in sorted(ws.glob(pattern))[:MAX_FILES]:
        name = path.relative_to(ws).as_posix()
        try:
            kept.append(inside(ws, name, "a recorded boot"))
        except InputError:
            found.left_out.append(f"{name}: it leads outside the workspace")
    return kept


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


def _ladders(ws: Path, engine: str, found: Recorded) -> None:
    for path in _files(ws, "ladders/*.yml", found):
        try:
            ladder = read_ladder(path)
        except RedlineError as exc:
            found.left_out.append(f"{path.relative_to(ws)}: {exc}")
            continue
        if ladder.engine != engine:
            continue
        name = path.relative_to(ws).as_posix()
        if ladder.model.shape is not None:
            found.observations += ladder_boots(ladder, name)
            continue
        for rung in ladder.rungs:
            found.add(f"{name} rung {rung.index}", rung.serve, engine, ladder_gpu(ladder), rung.signals)


def _cells(ws: Path, engine: str, found: Recorded) -> None:
    for verdict_path in _files(ws, "campaigns/*/cells/*/verdict.yml", found):
        results, cell = verdict_path.parents[2], verdict_path.parent.name
        try:
            verdict = read_verdict(results, cell)
        except RedlineError as exc:
            found.left_out.append(f"{verdict_path.relative_to(ws)}: {exc}")
            continue
        if verdict is None or verdict.context.engine.name != engine:
            continue
        hw = verdict.context.hardware
        serve, signals = verdict.context.serve, verdict.boot.signals
        found.add(str(verdict_path.relative_to(ws)), serve, engine, gpu_spec(hw.gpu_name, hw.gpu_memory_gib), signals)


def _trials(ws: Path, engine: str, found: Recorded) -> None:
    for trial_path in _files(ws, "ab/*/trials/*/trial.yml", found):
        log = trial_path.parent / "boot.log"
        try:
            record = TrialRecord.model_validate(load_plain(trial_path))
            if (record.engine or engine) != engine or not log.is_file():
                continue
            signals = get_engine(engine).parse_boot_log(read_text(log, "a trial's boot log", max_bytes=MAX_TEXT))
        except (RedlineError, ValidationError, OSError) as exc:
            found.left_out.append(f"{trial_path.relative_to(ws)}: {str(exc).splitlines()[0]}")
            continue
        hw = record.points[0].context.hardware if record.points else None
        gpu = gpu_spec(hw.gpu_name, hw.gpu_memory_gib) if hw else None
        found.add(str(trial_path.relative_to(ws)), record.serve, engine, gpu, signals)


def recorded_boots(workspace: Path, engine: str) -> Recorded:
    """Every booted ladder rung, campaign cell and A/B trial of `engine` in the workspace."""
    found, ws = Recorded(), workspace.resolve()
    for read in (_ladders, _cells, _trials):
        read(ws, engine, found)
    return found


__all__ = ["Recorded", "ladder_boots", "ladder_gpu", "recorded_boots"]
