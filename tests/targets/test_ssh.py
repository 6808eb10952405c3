"""SSH only, against a real sshd: host keys, reachability, one reused connection."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest

from redline.errors import HostKeyRejected, TargetAuthRejected, TargetUnreachable
from redline.targets import SSHTarget

from .conftest import PY, SSHServer, free_port, keygen

pytestmark = [pytest.mark.anyio, pytest.mark.sshd]


async def test_ssh_argv_is_not_shell_interpreted(ssh_target: SSHTarget, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    args = [
        f"; rm -rf {marker}",
        f"$(touch {marker})",
        f"`touch {marker}`",
        f"&& touch {marker}",
        "a  b",
        "'",
        '"',
        "\n",
    ]
    result = await ssh_target.run([PY, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *args])
    assert json.loads(result.stdout) == args  # each element arrived as one literal argument
    assert not marker.exists()


async def test_wrong_host_key_is_refused_before_any_command(sshd: SSHServer, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other_host")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {other}\n")
    marker = tmp_path / "ran"
    before = sshd.accepted()
    async with SSHTarget("gpu1", sshd.spec(known_hosts=str(known))) as target:
        with pytest.raises(HostKeyRejected) as err:
            await target.run(["touch", str(marker)])
    assert f"127.0.0.1:{sshd.port}" in str(err.value) and str(known) in str(err.value)
    assert not marker.exists()
    assert sshd.accepted() == before  # the client gave up before logging in


async def test_unknown_host_is_refused(sshd: SSHServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    async with SSHTarget("gpu1", sshd.spec(known_hosts=str(known))) as target:
        with pytest.raises(HostKeyRejected, match="ssh-keyscan"):
            await target.host_info()


async def test_missing_known_hosts_file_is_refused(sshd: SSHServer, tmp_path: Path) -> None:
    async with SSHTarget("gpu1", sshd.spec(known_hosts=str(tmp_path / "absent"))) as target:
        with pytest.raises(HostKeyRejected, match="does not exist"):
            await target.run(["true"])


async def test_unreachable_port_names_address_and_reason(sshd: SSHServer) -> None:
    port = free_port()
    async with SSHTarget("gpu1", sshd.spec(port=port)) as target:
        with pytest.raises(TargetUnreachable, match=f"127.0.0.1:{port}.*Connection refused"):
            await target.run(["true"])


async def test_unknown_client_key_is_rejected(sshd: SSHServer, tmp_path: Path) -> None:
    keygen(tmp_path / "stranger")
    async with SSHTarget("gpu1", sshd.spec(key_file=str(tmp_path / "stranger"))) as target:
        with pytest.raises(TargetAuthRejected, match="authorized_keys"):
            await target.run(["true"])


async def test_one_connection_serves_many_calls(ssh_target: SSHTarget, sshd: SSHServer, tmp_path: Path) -> None:
    before = sshd.accepted()
    (tmp_path / "f").write_text("x")
    await ssh_target.run(["true"])
    await ssh_target.read_text(str(tmp_path / "f"))
    await ssh_target.fetch(str(tmp_path / "f"), str(tmp_path / "g"))
    await ssh_target.host_info()
    handle = await ssh_target.start([PY, "-c", "pass"], env={}, cwd=None, log_path="l")
    await ssh_target.stop(handle)
    assert ssh_target.connect_count == 1
    assert sshd.accepted() - before == 1


async def test_reconnects_after_the_connection_drops(ssh_target: SSHTarget, sshd: SSHServer) -> None:
    await ssh_target.run(["true"])
    for pid in _children(sshd.proc.pid):  # the per-connection sshd processes: the link dies
        os.kill(pid, signal.SIGKILL)
    await anyio.sleep(0.5)
    assert (await ssh_target.run(["echo", "back"])).stdout == "back\n"
    assert ssh_target.connect_count == 2


async def test_health_is_polled_through_the_connection(ssh_target: SSHTarget, tmp_path: Path) -> None:
    (tmp_path / "health").write_text("ok")
    port = free_port()
    handle = await ssh_target.start(
        [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"], env={}, cwd=str(tmp_path), log_path="l"
    )
    try:
        outcome = await ssh_target.wait_ready(handle, f"http://127.0.0.1:{port}/health", 20, poll_s=0.05)
        assert outcome.status == "ready"
        assert list(ssh_target._forwards) == [("127.0.0.1", port)]  # the GET went through the tunnel
    finally:
        await ssh_target.stop(handle, grace_s=5)


ECHO = """import http.server, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.answer(b"health")
    def do_POST(self):
        self.answer(self.headers["Content-Type"].encode() + b" " + self.rfile.read(int(self.headers["Content-Length"])))
    def answer(self, body):
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
"""


async def test_the_accuracy_gate_s_post_goes_through_the_connection(ssh_target: SSHTarget, tmp_path: Path) -> None:
    port = free_port()
    handle = await ssh_target.start([PY, "-c", ECHO, str(port)], env={}, cwd=str(tmp_path), log_path="l")
    try:
        url = f"http://127.0.0.1:{port}/v1/completions"
        assert (await ssh_target.wait_ready(handle, url, 20, poll_s=0.05)).status == "ready"
        sent = await ssh_target.http_text(handle, url, body='{"prompt": ["a"]}', timeout_s=10)
        assert sent == 'application/json {"prompt": ["a"]}' and await ssh_target.http_text(handle, url) == "health"
    finally:
        await ssh_target.stop(handle, grace_s=5)


def _children(ppid: int) -> list[int]:
    kids = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == ppid:
            kids.append(int(name))
    return kids
