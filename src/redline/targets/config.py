"""The targets file: which hosts redline may use, by name.

    targets:
      local: {kind: local}
      gpu1: {kind: ssh, host: 10.0.0.5, port: 22, user: ubuntu,
             key_file: ~/.ssh/id_ed25519, known_hosts: ~/.ssh/known_hosts, workdir: /tmp/redline}

Each entry's `kind` picks its shape from the registry (kinds.py). Relative
paths are taken from the targets file's folder, so a file and its keys can
travel together.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Union

from pydantic import BaseModel, ConfigDict, Field

from redline.errors import TargetConfigError
from redline.inputs import load_yaml
from redline.models.experiment import TargetName
from redline.targets.base import Target
from redline.targets.kinds import KINDS
from redline.targets.spec import BaseSpec

if TYPE_CHECKING:
    TargetSpec = BaseSpec
else:
    # Built from the registry, so a new kind needs no line here.
    # Union[...] of a runtime tuple: the `X | Y` spelling cannot be built from a list
    TargetSpec = Annotated[Union[tuple(kind.spec for kind in KINDS.values())], Field(discriminator="kind")]  # noqa: UP007


class TargetsFile(BaseModel):
    """The whole targets file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    targets: dict[TargetName, TargetSpec]


def load_targets(path: str | Path) -> dict[str, BaseSpec]:
    """Read and check a targets file; relative paths resolve against its folder."""
    path = Path(path).expanduser()
    parsed = load_yaml(path, TargetsFile, "targets file", TargetConfigError)
    return {name: spec.resolved(path.parent) for name, spec in parsed.targets.items()}


def open_target(name: str, specs: dict[str, BaseSpec]) -> Target:
    """The target named in the targets file (not yet connected)."""
    spec = specs.get(name)
    if spec is None:
        known = ", ".join(sorted(specs)) or "(none)"
        raise TargetConfigError(f"unknown target {name!r}; known targets: {known}. Add it to the targets file.")
    return KINDS[spec.kind].factory(name, spec)
