"""The engine's version on a target (its own `--version`), asked once per target per server session and kept.

    versions = EngineVersions()                             # one per server (State), one per CLI process
    version, why = await versions.on(target, engine, progress)   # asks the target the first time only

A dry run, or a run, asks the target's engine for its version to look up the known-good entry; on the vLLM CPU build
that is 7-14 s. The answer is kept by target name, engine and the command that asks it, so every later dry run and
run (campaign or A/B) in the session answers at once (issue 40: each acked run was silent 7-8 s asking again). What
a unit ran is its boot log's own version, which its record keeps. A probe that found no version is not kept: the
next one asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from redline.engines.base import Engine
from redline.errors import RedlineError
from redline.ops.session import Progress, say
from redline.targets import Target

VERSION_RE = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[.+\-][0-9A-Za-z.+\-]*)?)\s*$")
VERSION_TIMEOUT_S = 180.0

Key = tuple[str, str, tuple[str, ...]]  # the target's name, the engine, the command that runs it there


def parse_version(text: str) -> str | None:
    """The version a `--version` command printed: the last line that ends in one."""
    for line in reversed([ln.strip() for ln in text.splitlines() if ln.strip()]):
        if m := VERSION_RE.search(line):
            return m.group(1)
    return None


async def engine_version_on(target: Target, engine: Engine) -> tuple[str | None, str]:
    """The engine's version on the target (its own `--version`), or None and why; asks every time."""
    command = target.engine_command(engine.name, list(engine.default_command))
    try:
        argv = engine.version_argv(command)
    except RedlineError as exc:  # a command whose version the engine cannot ask (SGLang's, by another name)
        return None, str(exc)
    try:
        run = await target.run(argv, env=target.engine_env, timeout_s=VERSION_TIMEOUT_S)
    except RedlineError as exc:
        return None, f"`{' '.join(argv)}` on {target.name} failed: {exc}"
    version = parse_version(run.stdout) or parse_version(run.stderr)
    if run.returncode != 0 or version is None:
        return None, f"`{' '.join(argv)}` on {target.name} exited {run.returncode} without a version"
    return version, ""


@dataclass
class EngineVersions:
    """The versions targets answered, by target name, engine and engine command."""

    known: dict[Key, str] = field(default_factory=dict)

    def fresh(self) -> EngineVersions:
        """The same store, for a run: it asks no target again (once per target per server); kept for callers."""
        return self

    async def on(self, target: Target, engine: Engine, progress: Progress | None = None) -> tuple[str | None, str]:
        """The engine's version on the target, or None and why; said on `progress` either way."""
        command = target.engine_command(engine.name, list(engine.default_command))
        key = (target.name, engine.name, tuple(command))
        if key in self.known:
            kept = self.known[key]
            await say(progress, 0.5, f"{engine.name} {kept} on {target.name} (asked earlier this session)")
            return kept, ""
        await say(progress, 0.2, f"asking {target.name} for {engine.name}'s version (kept for the session)")
        version, why = await engine_version_on(target, engine)
        if version is not None:
            self.known[key] = version
        await say(progress, 0.5, f"{engine.name} {version} on {target.name}" if version else why)
        return version, why


__all__ = ["VERSION_RE", "VERSION_TIMEOUT_S", "EngineVersions", "engine_version_on", "parse_version"]
