#!/usr/bin/env python3
"""Build a docker-archive image (importable by `ctr images import`) from the host's busybox-static.

No registry is involved: the one layer holds /bin/busybox and a symlink per applet. Used for the
cluster's pause (sandbox) image and for the engine pods' image, which runs a Python venv mounted
from the host (hostPath) rather than one baked into the image.

Usage: mkimage.py NAME CMD_JSON OUT.tar

CMD_JSON is the image's default command (no entrypoint, as in Docker's busybox image): a pod's
`command` replaces it and its `args` alone run as a command.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile

BUSYBOX = "/bin/busybox"
DIRS = ["bin", "tmp", "etc", "proc", "sys", "dev", "www", "var", "run", "root"]
FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\n",
    "etc/group": b"root:x:0:\n",
    "www/index.html": b"hello from a redline pod\n",
}
# /usr is often mounted from the host (hostPath) for engine pods: its tools follow busybox's.
PATH = "PATH=/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin"


def applets() -> list[str]:
    out = subprocess.run([BUSYBOX, "--list"], check=True, capture_output=True, text=True).stdout
    return sorted({a for a in out.split() if a and "/" not in a and a != "busybox"})


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def layer_bytes() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in DIRS:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add(BUSYBOX, "bin/busybox")
        for app in applets():
            info = tarfile.TarInfo("bin/" + app)
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
        for name, data in FILES.items():
            add_bytes(tar, name, data)
    return buf.getvalue()


def build(name: str, command: list[str], out: str) -> int:
    layer = layer_bytes()
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": command, "Env": [PATH], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_bytes = json.dumps(config).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": ["layer.tar"]}]
    with tarfile.open(out, "w") as tar:
        add_bytes(tar, config_name, config_bytes)
        add_bytes(tar, "layer.tar", layer)
        add_bytes(tar, "manifest.json", json.dumps(manifest).encode())
    return len(layer)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    name, command, out = argv[0], json.loads(argv[1]), argv[2]
    size = build(name, command, out)
    print(f"{out}: {name}, one layer of {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
