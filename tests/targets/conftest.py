"""Fixtures for the target tests: a real OpenSSH server on 127.0.0.1, and both targets.

(`anyio_backend` comes from tests/conftest.py.)
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from redline.targets import LocalTarget, ServerHandle, SSHSpec, SSHTarget, Target

SSHD = "/usr/sbin/sshd"
PY = sys.executable  # absolute, so it runs the same under sshd's default PATH


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_port(port: int, timeout_s: float = 10) -> None:
    """Until something listens on 127.0.0.1:port."""
    with anyio.fail_after(timeout_s):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.05)


def keygen(path: Path) -> str:
    """A new ed25519 key pair; returns the public key line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def machine_id() -> str | None:
    """This node's /etc/machine-id, None where it is missing or empty."""
    try:
        return Path("/etc/machine-id").read_text().strip() or None
    except OSError:
        return None


@dataclass
class SSHServer:
    """A running sshd and the files a client needs to reach it."""

    proc: subprocess.Popen[bytes]
    port: int
    user: str
    key_file: Path
    known_hosts: Path
    log: Path
    dir: Path

    def spec(self, **changes: object) -> SSHSpec:
        fields = dict(
            kind="ssh",
            host="127.0.0.1",
            port=self.port,
            user=self.user,
            key_file=str(self.key_file),
            known_hosts=str(self.known_hosts),
            workdir=str(self.dir / "work"),
            connect_timeout_s=5,
        )
        return SSHSpec(**{**fields, **changes})

    def accepted(self) -> int:
        """How many logins sshd has accepted so far."""
        return self.log.read_text(errors="replace").count("Accepted publickey")


def _sshd_config(d: Path, port: int) -> Path:
    config = d / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {d / 'host_ed25519'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / 'sshd.pid'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nStrictModes no\nUsePAM no\n"
        "Subsystem sftp internal-sftp\nMaxSessions 64\nLogLevel INFO\n"
    )
    return config


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited with {proc.returncode}: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"sshd did not listen on 127.0.0.1:{port}: {log.read_text()}")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    if not os.access(SSHD, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail(f"{SSHD} is missing; CI must install it (bash .ci/install-sshd.sh)")
        pytest.skip(f"{SSHD} is missing; install it with `bash .ci/install-sshd.sh` to run the SSH tests")
    d = tmp_path_factory.mktemp("sshd")
    host_pub = keygen(d / "host_ed25519")
    (d / "authorized_keys").write_text(keygen(d / "client_ed25519") + "\n")
    port = free_port()
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation dir
    log = d / "sshd.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(_sshd_config(d, port))],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    known_hosts = d / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    try:
        _wait_for_port(port, proc, log)
        yield SSHServer(proc, port, getpass.getuser(), d / "client_ed25519", known_hosts, log, d)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
async def ssh_target(sshd: SSHServer, tmp_path: Path) -> AsyncIterator[SSHTarget]:
    async with SSHTarget("gpu1", sshd.spec(workdir=str(tmp_path / "work"))) as target:
        yield target


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.sshd)])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    """Each shared test runs once on this host and once through the real sshd."""
    if request.param == "local":
        made: Target = LocalTarget("local", workdir=str(tmp_path / "work"))
    else:
        made = SSHTarget("gpu1", request.getfixturevalue("sshd").spec(workdir=str(tmp_path / "work")))
    async with made:
        yield made


@pytest.fixture
async def spawn(target: Target) -> AsyncIterator[list[ServerHandle]]:
    """Handles a test started; whatever is left is stopped afterwards."""
    handles: list[ServerHandle] = []
    yield handles
    for handle in handles:
        await target.stop(handle, grace_s=0)
