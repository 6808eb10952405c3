"""Issue 32, items 5 and 2 at the target: what redline reads from an engine's port and from a target's files is
bounded, on this host and through the real sshd.

Item 5: a neighbour on an engine's port (health, metrics, the accuracy gate all go through http_text) that answers
256 MiB is read up to MAX_URL_TEXT and the connection dropped (the neighbour counts what it could send); one that
trickles its answer is given up at the call's deadline, though each byte comes well within httpx's per-read timeout.
Item 2: Target.read_text refuses a FIFO at once and a file over its max_bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from redline.errors import TargetPathError
from redline.targets import ServerHandle, Target
from redline.targets.port_reads import MAX_URL_TEXT

from .conftest import PY, free_port, wait_port
from .test_processes import script, started, wait_for_file

pytestmark = pytest.mark.anyio
BIG = 256 << 20

# A neighbour on the port: `flood` answers 200 with BIG bytes, `trickle` one byte every 0.2 s for ever; either writes
# how many body bytes the kernel took from it into $3 once the reader is gone.
NEIGHBOUR = f"""
import socket, sys, time
port, mode, count = int(sys.argv[1]), sys.argv[2], sys.argv[3]
listener = socket.create_server(("127.0.0.1", port))
while True:
    conn, _ = listener.accept()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: {BIG}\\r\\n\\r\\n")
    sent, chunk = 0, b"0" * (1 << 20)
    try:
        while sent < {BIG}:
            if mode == "trickle":
                conn.sendall(b"0"); sent += 1; time.sleep(0.2)
            else:
                sent += conn.send(chunk)
    except OSError:
        pass
    conn.close()
    open(count, "w").write(str(sent))
"""


async def neighbour(target: Target, spawn: list[ServerHandle], tmp_path: Path, mode: str) -> tuple[ServerHandle, str]:
    port = free_port()
    argv = [PY, script(tmp_path, "neighbour.py", NEIGHBOUR), str(port), mode, str(tmp_path / "sent")]
    handle = await started(target, spawn, argv)
    await wait_port(port)
    (tmp_path / "sent").unlink(missing_ok=True)  # the probe's own connection
    return handle, f"http://127.0.0.1:{port}/metrics"


async def test_engine_port_reads_stop_at_the_cap(target: Target, spawn: list[ServerHandle], tmp_path: Path) -> None:
    handle, url = await neighbour(target, spawn, tmp_path, "flood")
    with anyio.fail_after(60):
        text = await target.http_text(handle, url, timeout_s=30)
    assert text is not None and len(text) == MAX_URL_TEXT
    sent = int(await wait_for_file(tmp_path / "sent"))
    assert sent < 4 * MAX_URL_TEXT, f"the neighbour sent {sent:,} bytes: the answer was read past the cap"


async def test_engine_port_reads_have_a_total_deadline(
    target: Target, spawn: list[ServerHandle], tmp_path: Path
) -> None:
    handle, url = await neighbour(target, spawn, tmp_path, "trickle")
    with anyio.fail_after(15):  # each byte comes within 0.2 s: only a deadline on the whole answer ends the read
        assert await target.http_text(handle, url, timeout_s=1) is None


async def test_untrusted_reads_on_a_target_refuse_a_fifo_and_a_file_over_the_cap(
    target: Target, tmp_path: Path
) -> None:
    fifo, big = tmp_path / "config.json", tmp_path / "big.json"
    os.mkfifo(fifo)
    big.write_bytes(b"x" * 4097)
    with anyio.fail_after(20):
        with pytest.raises(TargetPathError, match="not a regular file"):
            await target.read_text(str(fifo), 4096)
        with pytest.raises(TargetPathError, match="over"):
            await target.read_text(str(big), 4096)
    assert await target.read_text(str(big), 4097) == "x" * 4097
