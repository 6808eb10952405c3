"""The `slurm` entry of the targets file: which partition, what each job asks, and how its server is reached.

targets:
  cluster:
    kind: slurm
    partition: gpu
    account: llm-bench                 # absent: the user's default account
    qos: normal                        # absent: the association's default
    gpus: 1                            # per job (per boot)
    gpu_request: gres                  # --gres=gpu:1; or gpus-per-node: --gpus-per-node=1 (a cluster's choice)
    gpu_type: h100                     # --gres=gpu:h100:1 (absent: any type)
    cpus_per_task: 16
    mem: 64G                           # --mem (absent: the partition's default per CPU)
    exclusive: false                   # --exclusive: the whole node, whatever the job asks
    time_limit: "02:00:00"             # --time
    workdir: /shared/redline           # run folders, scripts and logs: storage the nodes and the login side share
    allocation: per_boot               # one job per boot; held: one allocation, a job step per boot
    reach: step                        # health polled inside the allocation; node: at the node's address
    pending_deadline_s: 600            # a job still PENDING this long is cancelled with Slurm's reason
    max_jobs: 8                        # per_boot: servers at once (a campaign's parallel), a job each
    servers_per_node: 1                # this target's servers on one node at once (they share its ports)
    slurm_conf: /etc/slurm/slurm.conf  # SLURM_CONF for every Slurm command (absent: Slurm's own default)
    login: {kind: ssh, host: login1, user: me, key_file: ~/.ssh/id_ed25519}   # absent: this host
    engine_commands: {vllm: [/shared/venvs/vllm/bin/vllm]}
    env: {HF_HOME: /shared/hf}
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from redline.targets.spec import AbsolutePath, BaseSpec, abspath
from redline.targets.ssh import SSHSpec, own_name

# What Slurm takes as a partition, account, QOS or gres type: no space, quote, comma or shell character.
SlurmWord = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=128)]
# Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED.
TimeLimit = Annotated[str, Field(pattern=r"^(UNLIMITED|\d+(-\d+)?(:\d{1,2}){0,2})$")]
Memory = Annotated[str, Field(pattern=r"^\d+[KMGT]?$")]
# An extra sbatch option, one word: `--constraint=h100`. Never a script, never a positional argument.
SbatchOption = Annotated[str, Field(pattern=r"^--[a-z][a-z-]*(=[^\x00\n]*)?$", max_length=512)]
# Options redline sets itself: a targets file that set them would change what redline tracks.
OWN_OPTIONS = frozenset(
    {"--job-name", "--comment", "--output", "--error", "--chdir", "--hold", "--parsable", "--wrap", "--array"}
)


class SlurmSpec(BaseSpec):
    """A partition of a Slurm cluster, reached with its own commands on a login host."""

    kind: Literal["slurm"]
    partition: SlurmWord
    account: SlurmWord | None = None
    qos: SlurmWord | None = None
    gpus: int = Field(1, ge=0, le=64)
    gpu_request: Literal["gres", "gpus-per-node"] = "gres"
    gpu_type: SlurmWord | None = None
    cpus_per_task: int | None = Field(None, ge=1, le=4096)
    mem: Memory | None = None
    exclusive: bool = False
    time_limit: TimeLimit = "01:00:00"
    workdir: AbsolutePath = "/tmp/redline-slurm"  # never used as such: _own_workdir names the user
    allocation: Literal["per_boot", "held"] = "per_boot"
    hold_idle_s: int = Field(600, ge=30, le=86400)  # held: the allocation ends itself this long after its last use
    reach: Literal["step", "node"] = "step"
    pending_deadline_s: float = Field(600.0, gt=0, le=86400)
    max_jobs: int = Field(8, ge=1, le=256)  # per_boot: servers (jobs) at once, each its own GPUs
    # Servers of this target on one node at once: they share its ports, so by default each gets a node of its own.
    servers_per_node: int = Field(1, ge=1, le=64)
    job_prefix: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]*$", max_length=20)] = "redline"
    sbatch_options: list[SbatchOption] = Field(default_factory=list)
    slurm_conf: AbsolutePath | None = None
    slurm_bin: AbsolutePath | None = None  # the folder of sbatch, srun, squeue...; absent: PATH
    login: SSHSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _own_workdir(cls, data: Any) -> Any:
        """Without a workdir, the user's own under /tmp (the login user's, else this one's): made 0700 and refused if
        another user made it (posix_scripts.PRIVATE); a real cluster names storage its nodes share."""
        if isinstance(data, dict) and data.get("workdir") is None:
            login = data.get("login")
            user = login.get("user") if isinstance(login, dict) else getattr(login, "user", None)
            data = {**data, "workdir": f"/tmp/redline-slurm-{own_name(user or getpass.getuser())}"}
        return data

    @model_validator(mode="after")
    def _options(self) -> Self:
        taken = sorted({o.split("=", 1)[0] for o in self.sbatch_options} & OWN_OPTIONS)
        if taken:
            raise ValueError(f"sbatch_options may not set {', '.join(taken)}: redline sets them to track its jobs")
        if self.gpu_type is not None and self.gpu_request != "gres":
            raise ValueError("gpu_type needs gpu_request: gres (--gres=gpu:TYPE:N)")
        return self

    def resolved(self, base: Path) -> Self:
        # The login host's key files travel with the targets file; every other path is on the cluster.
        if self.login is None:
            return self
        return self.model_copy(update={"login": self.login.resolved(base)})

    @property
    def gpu_option(self) -> str | None:
        """How a job asks for its GPUs, as one sbatch/srun option; None for a job without GPUs."""
        if self.gpus == 0:
            return None
        if self.gpu_request == "gpus-per-node":
            return f"--gpus-per-node={self.gpus}"
        kind = f"gpu:{self.gpu_type}" if self.gpu_type else "gpu"
        return f"--gres={kind}:{self.gpus}"


__all__ = ["OWN_OPTIONS", "SlurmSpec", "abspath"]
