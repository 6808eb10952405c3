"""Who owns a job or a running server: this machine, this boot of it, this PID namespace, this process.

A pid means something only on the machine, in the boot and in the PID namespace it was read in.
So a record carries all four: a second redline on a shared workspace (another host, a container
with its own PID namespace) can tell that a pid in a record is not one it can judge, and leaves
that record, and the engines it names, alone.

    mine = this_owner()
    where(record_owner) -> "here" (judge its pid), "elsewhere" (leave it alone), "gone" (same machine, rebooted)
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

Where = Literal["here", "elsewhere", "gone"]


def start_ticks(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (Linux), None if it is gone or unknown.

    Tells a live owner apart from a later process that reuses its pid.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces
    if len(fields) < 20 or fields[0] in "ZXx" or not fields[19].isdigit():
        return None
    return int(fields[19])  # field 22 of proc(5), counted from field 3 (the state)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip() or None
    except OSError:
        return None


@cache
def _machine() -> tuple[str, str | None, str | None]:
    """(host: hostname/machine-id, boot id, PID namespace); they do not change while a process runs."""
    machine_id = _read("/etc/machine-id") or _read("/var/lib/dbus/machine-id") or "-"
    try:
        pid_ns: str | None = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = None
    return f"{socket.gethostname()}/{machine_id}", _read("/proc/sys/kernel/random/boot_id"), pid_ns


class Owner(BaseModel):
    """A redline process, as a record names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str  # hostname/machine-id: the machine (a container image's machine-id alone could repeat)
    boot_id: str | None = None  # this boot of the machine: start ticks count from it
    pid_ns: str | None = None  # /proc/self/ns/pid, such as pid:[4026531836]
    pid: int
    start_ticks: int | None = None

    def describe(self) -> str:
        namespace = self.pid_ns or "PID namespace unknown"
        return f"redline pid {self.pid} on host {self.host.partition('/')[0]} ({namespace})"


def this_owner() -> Owner:
    host, boot_id, pid_ns = _machine()
    pid = os.getpid()
    return Owner(host=host, boot_id=boot_id, pid_ns=pid_ns, pid=pid, start_ticks=start_ticks(pid))


def where(host: str | None, boot_id: str | None, pid_ns: str | None) -> Where:
    """Whether a record's pid can be judged from here: "here" (the same machine, boot and PID namespace,
    or a record too old to say), "gone" (the same machine, booted again since), or "elsewhere"."""
    if host is None:
        return "here"  # written before records carried a host: judged by pid and start time, as then
    mine, my_boot, my_ns = _machine()
    if host != mine:
        return "elsewhere"
    if boot_id and my_boot and boot_id != my_boot:
        return "gone"
    if pid_ns and my_ns and pid_ns != my_ns:
        return "elsewhere"
    return "here"
