"""Running kubectl and helm: argv lists in their own session, a deadline that kills what they started,
and the port-forwards redline keeps open to reach a server bound to the pod's loopback.

Credentials are whatever the kubeconfig says; kubectl and helm read it themselves, and nothing here
prints or records it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from redline.errors import CommandTimeout, TargetConfigError, TargetError
from redline.targets.kubernetes_cluster import NodeRoom, events_text, node_rooms
from redline.targets.kubernetes_manifest import ClusterCommands
from redline.targets.kubernetes_names import RUN_KEY
from redline.targets.kubernetes_spec import KubernetesSpec

Json = dict[str, Any]

FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)")
NOT_RUNNING = "unable to forward port because pod is not running"  # kubectl's words for a pod that ended
FORWARD_START_S = 20.0


@dataclass(frozen=True)
class Completed:
    """How one kubectl or helm call ended."""

    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode(errors="replace")

    @property
    def not_found(self) -> bool:
        return self.returncode != 0 and ("NotFound" in self.stderr or "not found" in self.stderr)

    def check(self, what: str) -> Completed:
        """self, or TargetError naming what failed and what the command said."""
        if self.returncode != 0:
            said = self.stderr.strip() or self.text.strip() or f"exit {self.returncode}"
            raise TargetError(f"{what} failed: {self.argv[0]} said: {said[-2000:]}")
        return self


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def execute(argv: list[str], *, timeout_s: float, stdin: bytes | None = None) -> Completed:
    """Run argv to completion; past timeout_s it and what it started are killed (CommandTimeout)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise TargetConfigError(
            f"{argv[0]} is not installed here (or not on PATH): install it, or name it in the targets file "
            "(kubectl: [...] or helm_command: [...])"
        ) from exc
    try:
        with anyio.fail_after(timeout_s):
            out, err = await proc.communicate(stdin)
    except BaseException as exc:
        _killpg(proc.pid)
        with anyio.CancelScope(shield=True):
            await proc.wait()
        if isinstance(exc, TimeoutError):
            raise CommandTimeout(f"{argv[0]} {' '.join(argv[1:3])}... did not finish within {timeout_s:g}s") from exc
        raise
    code = proc.returncode if proc.returncode is not None else -1
    return Completed(argv, code, out, err.decode(errors="replace"))


class Cluster:
    """The reads every part of the target shares: JSON of objects, the pods of a label, waiting for them to go."""

    poll_s: float = 1.0

    def __init__(self, commands: ClusterCommands) -> None:
        self.commands = commands

    async def call(self, argv: list[str], *, stdin: bytes | None = None, timeout_s: float = 60) -> Completed:
        return await execute(argv, stdin=stdin, timeout_s=timeout_s)

    async def json(self, argv: list[str], what: str) -> Json:
        done = (await self.call(argv)).check(what)
        try:
            parsed = json.loads(done.text)
        except json.JSONDecodeError as exc:
            raise TargetError(f"{what}: {argv[0]} printed no JSON ({exc.msg})") from exc
        return parsed if isinstance(parsed, dict) else {}

    async def node_rooms(self, spec: KubernetesSpec, pinned: str | None, need_room: bool) -> list[NodeRoom]:
        """Each node's room now, for spec's pods: allocatable minus what the pods of every namespace request.
        need_room: a GPU pod's preflight, which may not use the nodes Slurm manages."""
        nodes = await self.json(self.commands.nodes(), "listing the nodes")
        pods = await self.json(self.commands.all_pods(), "listing the pods of every namespace")
        return node_rooms(
            nodes,
            pods,
            spec.gpu_resource,
            selector=spec.node_selector,
            tolerations=spec.tolerations,
            pinned=pinned,
            slurm=spec.slurm_guard if need_room else None,
        )

    async def pods(self, labels: dict[str, str]) -> list[Json]:
        """The pods with all of labels (and redline's managed-by label)."""
        found = await self.json(self.commands.pods(labels), f"listing the pods labelled {labels}")
        return [p for p in found.get("items") or [] if isinstance(p, dict)]

    async def run_pod(self, run_id: str) -> Json | None:
        """The newest pod of a run (a chart's controller may have replaced the first), or None."""
        pods = await self.pods({RUN_KEY: run_id})
        live = [p for p in pods if not meta(p).get("deletionTimestamp")] or pods
        return max(live, key=lambda p: str(meta(p).get("creationTimestamp", "")), default=None)

    async def events(self, name: str) -> str:
        """A pod's events as lines, or why they could not be read."""
        done = await self.call(self.commands.events(name))
        if done.returncode != 0:
            return f"(events not readable: {done.stderr.strip()})"
        try:
            return events_text(json.loads(done.text))
        except ValueError:
            return done.text.strip()

    async def wait_gone(self, labels: dict[str, str], timeout_s: float, what: str) -> None:
        """Wait until no pod has labels (a deleted pod is gone once its kubelet has stopped it)."""
        end = time.monotonic() + timeout_s
        while await self.pods(labels):
            if time.monotonic() >= end:
                raise TargetError(
                    f"{what} was deleted but is still there {timeout_s:.0f}s later; look at "
                    f"`kubectl get pods --show-labels` and the kubelet of its node"
                )
            await anyio.sleep(self.poll_s)


def meta(obj: Json) -> Json:
    found = obj.get("metadata")
    return found if isinstance(found, dict) else {}


def labels(obj: Json) -> dict[str, str]:
    found = meta(obj).get("labels")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


class PortForwards:
    """`kubectl port-forward pod/NAME :PORT` per pod and port, started on first use, restarted if it died.

    Its output goes to a file, not a pipe: kubectl writes a line per connection, and an unread pipe would
    stall it.
    """

    def __init__(self, commands: ClusterCommands, folder: Path) -> None:
        self.commands = commands
        self.folder = folder
        self._open: dict[tuple[str, int], tuple[asyncio.subprocess.Process, int]] = {}

    async def local_port(self, pod: str, port: int) -> int | None:
        """The port on 127.0.0.1 that reaches pod's port; None when the pod is no longer running."""
        known = self._open.get((pod, port))
        if known is not None and known[0].returncode is None:
            return known[1]
        await self.close(pod, port)
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / f"port-forward-{pod}-{port}.log"
        argv = self.commands.port_forward(pod, port)
        with log.open("wb") as out:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
                )
            except FileNotFoundError as exc:
                raise TargetConfigError(f"{argv[0]} is not installed here (or not on PATH)") from exc
        local = await self._wait_forwarding(proc, log)
        if local is not None:
            self._open[(pod, port)] = (proc, local)
        return local

    async def _wait_forwarding(self, proc: asyncio.subprocess.Process, log: Path) -> int | None:
        end = time.monotonic() + FORWARD_START_S
        while time.monotonic() < end:
            text = log.read_text(errors="replace")
            found = FORWARDING.search(text)
            if found:
                return int(found.group(1))
            if proc.returncode is not None and NOT_RUNNING in text:
                return None  # it ended between the look that saw it running and this forward
            if proc.returncode is not None:
                raise TargetError(f"kubectl port-forward exited {proc.returncode}: {text.strip()[-500:]}")
            await anyio.sleep(0.05)
        _killpg(proc.pid)
        raise TargetError(f"kubectl port-forward did not start within {FORWARD_START_S:g}s: {log.read_text()[-500:]}")

    async def close(self, pod: str | None = None, port: int | None = None) -> None:
        """Stop the forwards of pod (and port), or all of them."""
        for key in [k for k in self._open if pod in (None, k[0]) and port in (None, k[1])]:
            proc, _ = self._open.pop(key)
            if proc.returncode is None:
                _killpg(proc.pid)
                with anyio.CancelScope(shield=True):
                    await proc.wait()
