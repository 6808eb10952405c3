"""An A/B on disk: its spec (a person may edit and comment it) and its results folder.

    ab/<name>.yml                            the spec as run; comments kept; a re-run resumes it
    ab/<name>/trials/<arm>-<k>/trial.yml     one trial's record: its presence means the trial is done
    ab/<name>/trials/<arm>-<k>/boot.log      the server's whole log: boot, warm-up, benches
    ab/<name>/trials/<arm>-<k>/bench-c<C>.json   each bench's own result file
    ab/<name>/server.json                    the running trial's server, recorded before its boot is waited on
    ab/<name>/ab.lock                        held by the one runner

Every file is written whole by the one derived writer (ledger/derived.py: ab/ and each folder below it checked
right before each write, so one swapped for a symlink during a run is refused); a trial's record is written last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from redline.errors import InputError, LadderError
from redline.inputs import explain
from redline.ledger import yamlfile
from redline.ledger.derived import derived_file, derived_write
from redline.models.ab import AbSpec, TrialRecord
from redline.models.slug import plain_name

AB_DIR = "ab"
TRIAL = "trial.yml"
HEADER = (
    "redline A/B: arms booted cleanly in turn (A B A B ...), on one target, benched the same way.\n"
    "Comments you add here are kept. Results go to the folder named by `name`, beside this file."
)


@dataclass(frozen=True)
class AbPaths:
    """Where one A/B's files live, inside the workspace."""

    workspace: Path
    name: str

    def __post_init__(self) -> None:
        plain_name(self.name, "A/B")  # a name, never a path: it is joined to ab/ below

    @property
    def spec_file(self) -> Path:
        return self.workspace / AB_DIR / f"{self.name}.yml"

    @property
    def results(self) -> Path:
        return self.workspace / AB_DIR / self.name

    @property
    def server_file(self) -> Path:
        return self.results / "server.json"

    @property
    def lock_file(self) -> Path:
        return self.results / "ab.lock"

    def trial_dir(self, arm: str, trial: int) -> Path:
        return self.results / "trials" / f"{plain_name(arm, 'arm')}-{trial}"

    def relative(self, path: Path) -> str:
        return path.relative_to(self.workspace).as_posix()

    def checked(self, path: Path, *, create: bool = False) -> Path:
        """One of this A/B's files: ab/ and every folder below it real ones (made when `create`), the file absent
        or a plain one; DerivedPathError otherwise (a symlink there could lead out of the workspace)."""
        return derived_file(self.workspace, self.relative(path), create=create)

    def write(self, path: Path, text: str) -> Path:
        """One of this A/B's files written whole, its folders checked right before (a run lasts hours)."""
        return derived_write(self.workspace, self.relative(path), text)


def _parse(path: Path) -> object:
    try:
        return yamlfile.load(path)
    except LadderError as exc:  # the YAML reader's wording, for an A/B
        raise InputError(str(exc)) from exc


def read_spec(paths: AbPaths) -> AbSpec | None:
    """The A/B's spec; None when there is none yet."""
    path = paths.checked(paths.spec_file)
    if not path.exists():
        return None
    doc = _parse(path)
    try:
        return AbSpec.model_validate(yamlfile.plain(doc))
    except ValidationError as exc:
        raise InputError(f"{path}: not an A/B spec ({explain(exc)}); fix it, or give the A/B another name") from exc


def write_spec(paths: AbPaths, spec: AbSpec) -> None:
    """Write the spec, or change the one there in place (only a resume's trials differ), keeping its comments."""
    new = spec.model_dump(mode="json", exclude_none=True)
    path = paths.checked(paths.spec_file, create=True)
    with yamlfile.locked(path):
        if path.exists():
            doc = _parse(path)
            doc = yamlfile.merge(doc, yamlfile.plain(doc), new)
        else:
            doc = yamlfile.to_yaml(new)
            doc.yaml_set_start_comment(HEADER)
        paths.write(path, yamlfile.dumps(doc))


def read_trial(paths: AbPaths, arm: str, trial: int) -> TrialRecord | None:
    """The trial's record; None when it has none (the trial is not done)."""
    path = paths.checked(paths.trial_dir(arm, trial) / TRIAL)
    if not path.exists():
        return None
    hint = f"; delete {path.parent} to run the trial again"
    try:
        return TrialRecord.model_validate(yamlfile.load_plain(path))
    except LadderError as exc:
        raise InputError(f"{exc}{hint}") from exc
    except ValidationError as exc:
        raise InputError(f"{path}: not a trial record ({explain(exc)}){hint}") from exc


def write_trial(paths: AbPaths, record: TrialRecord) -> Path:
    path = paths.trial_dir(record.arm, record.trial) / TRIAL
    return paths.write(path, yamlfile.dumps(yamlfile.to_yaml(record.model_dump(mode="json"))))


def write_trial_file(paths: AbPaths, arm: str, trial: int, name: str, text: str) -> str:
    """A trial's side file (boot.log, bench-c8.json); its path relative to the workspace."""
    return paths.relative(paths.write(paths.trial_dir(arm, trial) / name, text))


__all__ = ["AB_DIR", "AbPaths", "read_spec", "read_trial", "write_spec", "write_trial", "write_trial_file"]
