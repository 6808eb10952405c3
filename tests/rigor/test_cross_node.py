"""A cross-node A/B comes back DRAFT for the same_node rule: a second test host made by this test, a real sshd in its
own network namespace (`ip netns add`, a veth pair) and its own UTS namespace (`unshare --uts`, another hostname),
with its own /etc/machine-id bind-mounted in its own mount namespace.

The A/B's target `gpu` first names the first host (the sshd of tests/targets/conftest.py on 127.0.0.1) for one
trial per arm, then the second host, where ab_run resumes and adds trials 2 and 3: every rule holds but same_node,
so the result is a DRAFT naming it. Needs root (for the namespaces) and an OpenSSH server; skipped without them,
failed when CI=true.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from redline.ledger.ab_file import AbPaths, read_trial
from redline.models.ab import AbSpec
from redline.ops.ab.run import ab_run
from redline.targets import SSHSpec, SSHTarget
from tests.campaign.helpers import FAST, make_fake, wait_until_gone
from tests.rigor.helpers import ab_spec
from tests.server.helpers import FAKE_VLLM
from tests.targets.conftest import SSHD, SSHServer, keygen, machine_id, sshd  # noqa: F401 (sshd: the first host)

pytestmark = [pytest.mark.anyio, pytest.mark.sshd]
HOSTNAME = "redline-node-2"
PORT = 2222


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "the second host's namespaces need root"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing"
    return None


@dataclass
class Node:
    address: str
    port: int
    known_hosts: Path
    machine_id: str


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def _wait(address: str, port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    end = time.monotonic() + 15
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"the second host's sshd exited {proc.returncode}: {log.read_text()}")
        try:
            socket.create_connection((address, port), timeout=0.3).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"the second host's sshd did not listen on {address}:{port}: {log.read_text()}")


@pytest.fixture
def second_node(sshd: SSHServer, tmp_path: Path) -> Iterator[Node]:  # noqa: F811
    why = _missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the cross-node test cannot run: {why}")
        pytest.skip(why)
    tag = f"{os.getpid() % 10000}"
    ns, veth, peer = f"rlnode{tag}", f"rlh{tag}", f"rln{tag}"
    octet = os.getpid() % 250 + 1
    host_ip, node_ip = f"10.213.{octet}.1", f"10.213.{octet}.2"
    d = tmp_path / "node2"
    d.mkdir()
    host_pub = keygen(d / "host_ed25519")
    (d / "authorized_keys").write_text(sshd.key_file.with_suffix(".pub").read_text())
    node_id = "0123456789abcdef0123456789abcdef"
    assert node_id != machine_id()
    (d / "machine-id").write_text(node_id + "\n")
    config = d / "sshd_config"
    config.write_text(
        f"ListenAddress {node_ip}\nPort {PORT}\nHostKey {d / 'host_ed25519'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nStrictModes no\nUsePAM no\nMaxSessions 64\n"
        "Subsystem sftp internal-sftp\n"
    )
    log = d / "sshd.log"
    try:
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", ns)
        _run("ip", "addr", "add", f"{host_ip}/30", "dev", veth)
        _run("ip", "link", "set", veth, "up")
        for argv in (
            ("ip", "addr", "add", f"{node_ip}/30", "dev", peer),
            ("ip", "link", "set", peer, "up"),
            ("ip", "link", "set", "lo", "up"),
        ):
            _run("ip", "netns", "exec", ns, *argv)
    except subprocess.CalledProcessError as exc:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot make the second host's network namespace here: {exc.stderr.strip()}")
    script = f"hostname {HOSTNAME} && mount --bind {d / 'machine-id'} /etc/machine-id && exec {SSHD} -D -e -f {config}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, "unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait(node_ip, PORT, proc, log)
        known = d / "known_hosts"
        known.write_text(f"[{node_ip}]:{PORT} {host_pub}\n")
        yield Node(node_ip, PORT, known, node_id)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", veth], capture_output=True)


async def test_an_ab_across_two_nodes_is_a_draft_for_the_same_node_rule(
    sshd: SSHServer,  # noqa: F811 - the first host: the fixture imported above
    second_node: Node,
    tmp_path: Path,
) -> None:
    fake = make_fake(tmp_path / "fake", FAKE_VLLM_DECODE_MODEL="1")
    ws = tmp_path / "ws"
    ws.mkdir()

    def spec(trials: int) -> AbSpec:  # one concurrency, cold: the SSH round trips are what take time here
        return ab_spec(fake, target="gpu", trials=trials, concurrencies=[1], warmup_requests=0)

    engine = {"engine_command": [sys.executable, str(FAKE_VLLM)], "env": {**FAST, "FAKE_VLLM_DECODE_MODEL": "1"}}
    first = sshd.spec(workdir=str(tmp_path / "work1"), **engine)
    second = first.model_copy(
        update={
            "host": second_node.address,
            "port": second_node.port,
            "known_hosts": str(second_node.known_hosts),
            "workdir": str(tmp_path / "work2"),
        }
    )
    async with SSHTarget("gpu", first) as node1:
        one = await ab_run(ws, spec(1), node1, i_understand_this_submits_jobs=True)
    assert one.verdict is not None and one.verdict.failed == ["min_trials"]
    async with SSHTarget("gpu", SSHSpec.model_validate(second.model_dump())) as node2:
        info = await node2.host_info()
        assert info.hostname == HOSTNAME and info.machine_id == second_node.machine_id
        result = await ab_run(ws, spec(3), node2, i_understand_this_submits_jobs=True)
    assert result.ran == ["small-2", "large-2", "small-3", "large-3"]
    v = result.verdict
    assert v is not None and v.rigor == "DRAFT" and v.failed == ["same_node"], v.summary
    why = v.rules[0].why
    assert "the trials ran on 2 nodes" in why and HOSTNAME in why and socket.gethostname() in why
    paths = AbPaths(ws, "mnbt")
    nodes = {k: read_trial(paths, "small", k).node for k in (1, 2, 3)}  # type: ignore[union-attr]
    assert nodes[1].hostname != HOSTNAME and nodes[2].hostname == nodes[3].hostname == HOSTNAME
    assert nodes[1].machine_id == machine_id() and nodes[2].machine_id == second_node.machine_id
    contexts = [p.context for a in result.arms for p in a.points]
    assert all(c.node is None and len(c.nodes) == 2 for c in contexts)  # every node each figure came from
    assert wait_until_gone(tmp_path / "fake") == [] and wait_until_gone(tmp_path / "work2") == []
