"""noise.yml: the boot-to-boot spreads the workspace's runs measured, kept per model, engine, GPU and host, and read
back as the band of a run that measured none of its own ("from earlier boots").

    keep_spreads(workspace, setup, "campaigns/seqs.yml", noise)   # after a run: its measured bands
    earlier = earlier_for(workspace, setup, besides="campaigns/seqs.yml")   # metric -> Band (basis "earlier")

noise.yml is derived (delete it and every run that measured a spread writes its own again); it keeps comments a person
adds, like the workspace's other files.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from redline.ledger.edited_yaml import EditedFile
from redline.models.context import ContextDescriptor
from redline.models.metrics import Band
from redline.models.spreads import Setup, Spread, SpreadsFile
from redline.policy.known_good import hardware_key
from redline.policy.spreads import earlier_noise, merged, spreads_of

SPREADS_FILE = EditedFile(
    "noise.yml",
    SpreadsFile,
    "noise file",
    "redline's boot-to-boot spreads: per model, engine, GPU and host, each metric's spread between boots that a\n"
    "campaign's replicates (or an A/B's trials) measured. A run that measures none of its own is judged by them\n"
    "('from earlier boots'). Derived: delete it and the next runs write it again.",
)


def spreads_path(workspace: Path) -> Path:
    return workspace / SPREADS_FILE.name


def setup_of(context: ContextDescriptor) -> Setup:
    """The setup a figure's context names: its model, engine, GPU (or cpu) and host."""
    node = context.node
    host = (node.hostname or node.machine_id or "") if node is not None else ""
    return Setup(
        model=context.model.name,
        engine=context.engine.name,
        hardware=hardware_key(context.hardware.gpu_name),
        host=host,
    )


def earlier_for(workspace: Path, setup: Setup, besides: str = "") -> dict[str, Band]:
    """Each metric's band earlier runs of this setup measured (`besides`: a run's own left out); empty: none."""
    return earlier_noise(_spreads(workspace), setup, besides)


def kept_elsewhere(workspace: Path, model: str, engine: str) -> list[Setup]:
    """The setups of this model and engine (any GPU, any host) whose spreads are kept: before a run's first boot
    names its GPU and host, what it could be judged by."""
    setups = {Setup.model_validate(s.model_dump(include=set(Setup.model_fields))) for s in _spreads(workspace)}
    return sorted((s for s in setups if (s.model, s.engine) == (model, engine)), key=lambda s: s.describe())


def _spreads(workspace: Path) -> list[Spread]:
    return SPREADS_FILE.read(spreads_path(workspace)).spreads


def keep_spreads(workspace: Path, setup: Setup, run: str, noise: Mapping[str, Band]) -> None:
    """Keep the bands a run measured between its own boots for its setup (replacing what it kept before)."""
    new = spreads_of(setup, run, noise, datetime.now(UTC))
    if not new:
        return

    def change(current: SpreadsFile) -> tuple[SpreadsFile, None]:
        return current.model_copy(update={"spreads": merged(current.spreads, run, new)}), None

    SPREADS_FILE.update(spreads_path(workspace), change)


__all__ = ["SPREADS_FILE", "earlier_for", "keep_spreads", "kept_elsewhere", "setup_of", "spreads_path"]
