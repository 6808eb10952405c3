"""Every kind of target, by the name a targets file gives it.

A new kind is one module (its spec, a subclass of BaseSpec with `kind: Literal["<name>"]`,
its Target, and `from_spec(name, spec)`) plus one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from redline.targets import kubernetes, local, slurm, ssh
from redline.targets.base import Target
from redline.targets.spec import BaseSpec


class Kind(NamedTuple):
    """A kind of target: the targets-file entry it reads, and how to open one from it."""

    spec: type[BaseSpec]
    factory: Callable[[str, Any], Target]  # (name, spec) -> a target, not yet connected


KINDS: dict[str, Kind] = {
    "local": Kind(local.LocalSpec, local.from_spec),
    "ssh": Kind(ssh.SSHSpec, ssh.from_spec),
    "kubernetes": Kind(kubernetes.KubernetesSpec, kubernetes.from_spec),
    "slurm": Kind(slurm.SlurmSpec, slurm.from_spec),
}
