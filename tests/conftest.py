"""Shared test helpers: where the real captured data lives."""

import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
H200 = DATA / "vllm-0.26.0-h200"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def h200_log(name: str) -> str:
    return (H200 / name).read_text()


def pid_running(pid: int) -> bool:
    """A live process (a zombie is dead: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in "ZXx"


def processes_naming(path: Path) -> list[str]:
    """Command lines of live processes (not zombies) that name `path`: what a test must not leave behind."""
    needle, found = str(path).encode(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # gone while we looked
        if state not in "ZXx" and needle in cmdline:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found
