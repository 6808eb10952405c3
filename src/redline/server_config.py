"""The server config file: the workspace, the targets file, the HTTP token, and what each engine is widened by.

    workspace: ./work             # ladders, runs and campaigns; tool arguments name files in here
    targets: ./targets.yml        # the targets file (see redline.targets)
    http:
      bearer_token_env: REDLINE_MCP_TOKEN   # needed to serve HTTP on any address but loopback
    widen:                        # on purpose: what an engine may get beyond redline's allowlist
      vllm: {flags: [--enable-sleep-mode], env: [VLLM_SOME_SWITCH]}   # each rung it touches records it
    adopt_from:                   # on purpose: folders outside the workspace ladder_adopt may read ladders from
      - /data/ladders
    models_from:                  # on purpose: folders outside the workspace memory_predict may read models from
      - /models

Relative paths are taken from the config file's folder. With no config file at all
(`default_server_config`), the workspace is the user's data folder and the only target is
this host, as `local`: enough to add the server to an MCP client with nothing to write.
Below both the MCP server and the CLI: `redline mcp` starts the server with it, and the CLI's
--config reads its `widen:` (read_widening, read_widenings) without loading the server.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from redline.engines import EngineName, get_engine
from redline.errors import InputError, RedlineError
from redline.inputs import load_yaml
from redline.models import ServeConfig, Widening
from redline.targets import LocalSpec, Target, TargetSpec, load_targets, open_target

STATE_DIR = ".redline"  # the server's own state inside the workspace (jobs); no tool argument may name it


class HttpConfig(BaseModel):
    """How the HTTP transport authenticates callers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bearer_token_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    def bearer_token(self) -> str | None:
        """The token from the environment variable the config names; None when none is named."""
        if self.bearer_token_env is None:
            return None
        token = os.environ.get(self.bearer_token_env, "")
        if len(token) < 16:
            raise InputError(
                f"http.bearer_token_env names {self.bearer_token_env}, which is unset or shorter than 16 "
                f"characters; export {self.bearer_token_env}=<a long random token> before starting the server"
            )
        return token


class ServerConfig(BaseModel):
    """What one server works with, with absolute paths; targets None: this host only, as `local`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workspace: Path
    targets: Path | None = None
    http: HttpConfig = HttpConfig()
    # What a person allows each engine beyond redline's allowlist. Never a tool argument: an agent cannot widen.
    widen: dict[EngineName, Widening] = Field(default_factory=dict)
    # Folders outside the workspace whose ladders ladder_adopt may read (a person's choice, never a tool argument).
    adopt_from: list[Path] = Field(default_factory=list, max_length=64)
    # Folders outside the workspace whose models' config.json memory_predict may read (docs/security.md, 38.9).
    models_from: list[Path] = Field(default_factory=list, max_length=64)

    @field_validator("widen")
    @classmethod
    def _widen_names_real_options(cls, widen: dict[str, Widening]) -> dict[str, Widening]:
        """Each widened flag must be one of the engine's options and not one a serve config owns."""
        for engine, widening in widen.items():
            probe = ServeConfig(
                model="probe", max_model_len=1, extra_flags=widening.flags, env=dict.fromkeys(widening.env, "")
            )
            try:
                get_engine(engine).admit(probe, widening)
            except RedlineError as exc:
                raise ValueError(f"{engine}: {exc}") from None
        return widen

    @property
    def state_dir(self) -> Path:
        return self.workspace / STATE_DIR

    def widening(self, engine: str) -> Widening | None:
        """What this config allows `engine` beyond its allowlist; None when it widens nothing."""
        return self.widen.get(engine)

    def target_specs(self) -> dict[str, TargetSpec]:
        """The targets table, read again on every call, so adding a target needs no restart."""
        if self.targets is None:
            return {"local": LocalSpec(kind="local")}
        return load_targets(self.targets)

    def open_target(self, name: str) -> Target:
        """The target of that name (not yet connected); an unknown name is refused with the known ones."""
        return open_target(name, self.target_specs())


class ConfigFile(ServerConfig):
    """The config file: it must name its targets file."""

    targets: Path


def load_server_config(path: str | Path) -> ServerConfig:
    """Read and check the server config; create the workspace folder if it is missing."""
    path = Path(path).expanduser()
    config = load_yaml(path, ConfigFile, "the server config", hint="; pass --config FILE")
    base = path.parent
    workspace = _make_workspace((base / config.workspace.expanduser()).resolve())
    targets = (base / config.targets.expanduser()).resolve()
    if not targets.is_file():
        raise InputError(f"the targets file {targets} named in {path} does not exist; create it or fix `targets:`")
    adopt_from = [(base / folder.expanduser()).resolve() for folder in config.adopt_from]
    models_from = [(base / folder.expanduser()).resolve() for folder in config.models_from]
    return ServerConfig(
        workspace=workspace,
        targets=targets,
        http=config.http,
        widen=config.widen,
        adopt_from=adopt_from,
        models_from=models_from,
    )


def read_widening(path: str | Path, engine: str) -> Widening | None:
    """The widening a server config file gives `engine`, for the CLI; reads the file only, creates nothing."""
    return read_widenings(path).get(engine)


def read_widenings(path: str | Path) -> dict[str, Widening]:
    """Every engine's widening a server config file gives, for the CLI; reads the file only, creates nothing."""
    path = Path(path).expanduser()
    return load_yaml(path, ConfigFile, "the server config", hint="; pass --config FILE").widen


def default_workspace() -> Path:
    """The workspace of a server started with no config file: `redline/workspace` in the user's data folder
    ($XDG_DATA_HOME, else ~/.local/share; ~/Library/Application Support on macOS)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "redline" / "workspace"


def default_server_config() -> ServerConfig:
    """The config of a server started with no config file: the default workspace, this host as `local`."""
    return ServerConfig(workspace=_make_workspace(default_workspace().resolve()))


def _make_workspace(workspace: Path) -> Path:
    try:
        workspace.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the workspace {workspace}: {exc.strerror or exc}") from exc
    return workspace


__all__ = [
    "STATE_DIR",
    "ConfigFile",
    "HttpConfig",
    "ServerConfig",
    "default_server_config",
    "default_workspace",
    "load_server_config",
    "read_widening",
    "read_widenings",
]
