"""The targets file: which hosts redline may use, by name.

    targets:
      local: {kind: local}
      gpu1: {kind: ssh, host: 10.0.0.5, port: 22, user: ubuntu,
             key_file: ~/.ssh/id_ed25519, known_hosts: ~/.ssh/known_hosts, workdir: /tmp/redline}

Relative paths are taken from the targets file's folder, so a file and its keys
can travel together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from redline.inputs import load_yaml
from redline.errors import TargetConfigError
from redline.targets.base import Target
from redline.targets.local import LocalTarget
from redline.targets.ssh import SSHTarget


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _HostSpec(_Spec):
    """How a host runs the engine: the command that stands for `vllm`, and the environment it needs."""

    engine_command: list[Annotated[str, Field(min_length=1, pattern=r"^[^\x00]+$")]] = Field(
        default_factory=lambda: ["vllm"], min_length=1
    )
    env: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")], str] = Field(default_factory=dict)


class LocalSpec(_HostSpec):
    """This host."""

    kind: Literal["local"]
    workdir: str | None = None


class SSHSpec(_HostSpec):
    """A host reached over SSH; its key must already be in known_hosts."""

    kind: Literal["ssh"]
    host: str = Field(min_length=1, pattern=r"^[^-\s]")
    port: int = Field(22, ge=1, le=65535)
    user: str = Field(min_length=1, pattern=r"^[^-\s]")
    key_file: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    workdir: str = "/tmp/redline"
    connect_timeout_s: float = Field(10.0, gt=0)

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must be an absolute path on the remote host")
        return value


TargetSpec = Annotated[LocalSpec | SSHSpec, Field(discriminator="kind")]
TargetName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]


class TargetsFile(_Spec):
    """The whole targets file."""

    targets: dict[TargetName, TargetSpec]


def load_targets(path: str | Path) -> dict[str, LocalSpec | SSHSpec]:
    """Read and check a targets file; relative paths resolve against its folder."""
    path = Path(path).expanduser()
    parsed = load_yaml(path, TargetsFile, "targets file", TargetConfigError)
    return {name: _resolve(spec, path.parent) for name, spec in parsed.targets.items()}


def open_target(name: str, specs: dict[str, LocalSpec | SSHSpec]) -> Target:
    """The target named in the targets file (not yet connected)."""
    spec = specs.get(name)
    if spec is None:
        known = ", ".join(sorted(specs)) or "(none)"
        raise TargetConfigError(
            f"unknown target {name!r}; known targets: {known}. Add it to the targets file."
        )
    target: Target = LocalTarget(name, workdir=spec.workdir) if isinstance(spec, LocalSpec) else SSHTarget(name, spec)
    target.engine_command = list(spec.engine_command)
    target.engine_env = dict(spec.env)
    return target


def _resolve(spec: LocalSpec | SSHSpec, base: Path) -> LocalSpec | SSHSpec:
    if isinstance(spec, LocalSpec):
        program, *rest = spec.engine_command
        if "/" in program:  # a local engine path like .venv-vllm/bin/vllm travels with the targets file
            program = _abspath(program, base)
        return spec.model_copy(update={"workdir": spec.workdir and _abspath(spec.workdir, base),
                                       "engine_command": [program, *rest]})
    update = {"known_hosts": _abspath(spec.known_hosts, base)}
    if spec.key_file:
        update["key_file"] = _abspath(spec.key_file, base)
    return spec.model_copy(update=update)


def _abspath(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())

