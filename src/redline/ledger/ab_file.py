"""An A/B on disk: its spec (a person may edit and comment it) and its results folder.

    ab/<name>.yml                            the spec as run; comments kept; a re-run resumes it
    ab/<name>/trials/<arm>-<k>/trial.yml     one trial's record: its presence means the trial is done
    ab/<name>/trials/<arm>-<k>/boot.log      the server's whole log: boot, warm-up, benches
    ab/<name>/trials/<arm>-<k>/bench-c<C>.json   each bench's own result file
    ab/<name>/trials/<arm>-<k>/server.json   the running trial's server, recorded before its boot is waited on
    ab/<name>/ab.lock                        held by the one runner

The results are the one layout of every experiment (ledger/results.py): every file written whole by the one derived
writer, ab/ and each folder below it checked right before each write; a trial's record is written last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from redline.errors import InputError, LadderError
from redline.ledger import yamlfile
from redline.ledger.results import Results
from redline.models.ab import AbSpec, TrialRecord
from redline.models.slug import plain_name
from redline.validation_text import explain_line

AB_DIR = "ab"
TRIAL = "trial.yml"
_HEADER = (
    "redline A/B: arms booted cleanly in turn (A B A B ...), on one target, benched the same way.\n"
    "Comments you add here are kept. Results go to the folder named by `name`, beside this file."
)


@dataclass(frozen=True)
class AbPaths:
    """Where one A/B's files live, inside the workspace: its spec, and its results in the one layout
    (ledger/results.py: a folder per trial under ab/<name>/trials)."""

    workspace: Path
    name: str

    def __post_init__(self) -> None:
        plain_name(self.name, "A/B")  # a name, never a path: it is joined to ab/ below

    @property
    def spec_file(self) -> Path:
        return self.workspace / AB_DIR / f"{self.name}.yml"

    @property
    def results(self) -> Results:
        return Results(self.workspace, f"{AB_DIR}/{self.name}", "trials", TRIAL, "ab.lock", "trial")

    def trial_dir(self, arm: str, trial: int) -> Path:
        return self.results.unit_dir(trial_name(arm, trial))

    def relative(self, path: Path) -> str:
        return path.relative_to(self.workspace).as_posix()


def trial_name(arm: str, trial: int) -> str:
    """A trial's name, its folder's: <arm>-<k>."""
    return f"{plain_name(arm, 'arm')}-{trial}"


def _parse(path: Path) -> object:
    try:
        return yamlfile.load(path)
    except LadderError as exc:  # the YAML reader's wording, for an A/B
        raise InputError(str(exc)) from exc


def read_spec(paths: AbPaths) -> AbSpec | None:
    """The A/B's spec; None when there is none yet."""
    path = paths.results.checked(paths.spec_file)
    if not path.exists():
        return None
    doc = _parse(path)
    try:
        return AbSpec.model_validate(yamlfile.plain(doc))
    except ValidationError as exc:
        raise InputError(
            f"{path}: not an A/B spec ({explain_line(exc)}); fix it, or give the A/B another name"
        ) from exc


def write_spec(paths: AbPaths, spec: AbSpec) -> None:
    """Write the spec, or change the one there in place (only a resume's trials differ), keeping its comments."""
    new = spec.model_dump(mode="json", exclude_none=True)
    path = paths.results.checked(paths.spec_file, create=True)
    with yamlfile.locked(path):
        if path.exists():
            doc = _parse(path)
            doc = yamlfile.merge(doc, yamlfile.plain(doc), new)
        else:
            doc = yamlfile.to_yaml(new)
            doc.yaml_set_start_comment(_HEADER)
        paths.results.write(path, yamlfile.dumps(doc))


def read_trial(paths: AbPaths, arm: str, trial: int) -> TrialRecord | None:
    """The trial's record; None when it has none (the trial is not done)."""
    return paths.results.read_record(trial_name(arm, trial), TrialRecord)


__all__ = ["AB_DIR", "AbPaths", "read_spec", "read_trial", "trial_name", "write_spec"]
