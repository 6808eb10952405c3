"""Names and comments of the jobs redline submits to Slurm. Pure functions.

A job (or a held allocation's step) is named `<prefix>-<experiment>-<run id>`: the experiment (a ladder,
campaign or A/B) and the run folder's id, unique per boot (the attempt). A held allocation is
`<prefix>-<experiment>-hold`. Every job also carries a comment redline reads back before it cancels anything:

    redline:target=<target>,experiment=<experiment>,role=server,run=<run id>,unit=<rung or cell>,exclusive=1

so teardown and stop act only on jobs whose name and comment both say this target submitted them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from redline.targets.base import NO_EXPERIMENT, RUN_ID_RE

COMMENT_TAG = "redline:"
_NOT_WORD = re.compile(r"[^A-Za-z0-9._]+")
_RUN_TAIL = re.compile(r"-(\d{8}T\d{6}Z-[0-9a-f]{8})\Z")
MAX_WORD = 48


def word(value: str | None, default: str = NO_EXPERIMENT) -> str:
    """A value as a word safe in a job name and a comment: letters, digits, '.', '_' and '-', 48 at most."""
    cleaned = _NOT_WORD.sub("-", value or "").strip("-.")[:MAX_WORD].rstrip("-.")
    return cleaned or default


def job_name(prefix: str, experiment: str | None, run_id: str) -> str:
    """The name of the job (or step) that runs one boot."""
    return f"{prefix}-{word(experiment)}-{run_id}"


def hold_name(prefix: str, experiment: str | None) -> str:
    """The name of an experiment's held allocation."""
    return f"{prefix}-{word(experiment)}-hold"


def run_of(name: str) -> str | None:
    """The run id a job or step name ends with, or None for any other name (a hold, a bench step)."""
    found = _RUN_TAIL.search(name)
    return found.group(1) if found and RUN_ID_RE.match(found.group(1)) else None


@dataclass(frozen=True)
class JobTag:
    """What a job's comment says about it: whose it is and what it runs."""

    target: str
    experiment: str
    role: str  # server | hold
    run: str | None = None
    unit: str | None = None  # the rung, cell or trial, where the operation names it
    exclusive: bool = False

    def comment(self) -> str:
        fields = {"target": self.target, "experiment": self.experiment, "role": self.role}
        if self.run:
            fields["run"] = self.run
        if self.unit:
            fields["unit"] = word(self.unit, "")
        if self.exclusive:
            fields["exclusive"] = "1"
        return COMMENT_TAG + ",".join(f"{k}={v}" for k, v in fields.items() if v)


def tag_if_ours(name: str, comment: str, target: str, prefix: str) -> JobTag | None:
    """The tag of a job this target submitted (its name has the target's prefix, its comment names the target);
    None for anyone else's job, or another target's."""
    tag = parse_comment(comment)
    return tag if tag is not None and tag.target == target and name.startswith(prefix + "-") else None


def parse_comment(text: str | None) -> JobTag | None:
    """The tag a comment of redline's carries, or None for any other comment."""
    if not text or not text.startswith(COMMENT_TAG):
        return None
    fields = dict(part.partition("=")[::2] for part in text[len(COMMENT_TAG) :].split(",") if "=" in part)
    if not fields.get("target") or fields.get("role") not in ("server", "hold"):
        return None
    return JobTag(
        target=fields["target"],
        experiment=fields.get("experiment") or NO_EXPERIMENT,
        role=fields["role"],
        run=fields.get("run") or None,
        unit=fields.get("unit") or None,
        exclusive=fields.get("exclusive") == "1",
    )
