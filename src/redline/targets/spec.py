"""What every kind's entry in the targets file shares: how the host runs engines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field

from redline.engines.names import EngineName
from redline.targets.base import EngineSettings

Word = Annotated[str, Field(min_length=1, pattern=r"^[^\x00]+$")]
Command = Annotated[list[Word], Field(min_length=1)]
# A path on the target's host: absolute, one line (it lands in scripts and manifests).
AbsolutePath = Annotated[str, Field(pattern=r"^/[^\x00\n]*$")]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class BaseSpec(BaseModel):
    """One entry of the targets file; each kind subclasses it with `kind: Literal["<name>"]` and its fields.

    engine_commands names the command per engine; engine_command, the older form, is the command
    for whichever engine the caller runs. Neither set: the engine's own default.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    engine_commands: dict[EngineName, Command] = Field(default_factory=dict)
    engine_command: Command | None = None
    env: dict[EnvName, str] = Field(default_factory=dict)
    # The engine's control endpoints (vLLM's dev mode) on a server whose benches follow, to empty its prefix cache
    # between them: reachable there by whoever reaches its port (docs/security.md, 38.1). None: the kind's default
    # (local: on; ssh, kubernetes, slurm: off, benches kept clean by fresh prompts instead).
    dev_mode: bool | None = None
    compile_cache_persists: bool = Field(
        False,
        description="a deployment here keeps the engine's torch.compile cache between boots (on a volume that "
        "outlives the server): a ladder proves its ceiling with the cache warm. False: every deployment compiles "
        "cold, and a ceiling is proven cold",
    )

    def resolved(self, base: Path) -> Self:
        """This spec with its relative paths taken from base, the targets file's folder."""
        return self

    def engine_settings(self) -> EngineSettings:
        """The engine part, as Target's constructor takes it."""
        return EngineSettings(
            engine_env=self.env,
            engine_commands=self.engine_commands,
            engine_command=self.engine_command,
            dev_mode=self.dev_mode,
            compile_cache_persists=self.compile_cache_persists,
        )


def abspath(value: str, base: Path) -> str:
    """value with ~ expanded and, when relative, taken from base."""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())
