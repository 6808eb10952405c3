"""A read-only FUSE mirror of a folder whose reads are held to a rate: a model folder that loads slowly for real.

    python tests/server/throttled_fs.py SOURCE MOUNTPOINT --mb-s 1.7 [--stats STATS.json]

Runs in the foreground (a test's child process) until unmounted: `fusermount3 -u MOUNTPOINT`. Every read waits its
turn on one clock that lets `--mb-s` decimal MB a second through, across all files and threads: a read of n bytes
ends no sooner than n / rate seconds after the one before it ended. Without direct_io the kernel's page cache reads
through here too, so a file mapped into memory (safetensors are) and read by page faults is held to the same rate
as one read with read(2). On unmount it writes the bytes and reads each file gave to `--stats`, as JSON, so a test
can tell that what it timed went through the throttle.

Needs mfusepy (the test extras) and libfuse3 with fusermount3 (Debian's fuse3: scripts/install-fuse.sh).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import mfusepy

STAT_KEYS = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_atime", "st_mtime", "st_ctime")
STATVFS_KEYS = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_namemax")


class Clock:
    """One queue for every read: each waits until the bytes before it, and its own, have had their time."""

    def __init__(self, bytes_per_s: float) -> None:
        self.bytes_per_s = bytes_per_s
        self.free_at = time.monotonic()
        self.lock = threading.Lock()

    def wait(self, size: int) -> None:
        with self.lock:
            self.free_at = max(time.monotonic(), self.free_at) + size / self.bytes_per_s
            until = self.free_at
        time.sleep(max(0.0, until - time.monotonic()))


class ThrottledMirror(mfusepy.Operations):
    """SOURCE, read-only, every read through the clock."""

    use_ns = True

    def __init__(self, source: Path, clock: Clock, stats: Path | None) -> None:
        self.source, self.clock, self.stats_path = source, clock, stats
        self.read_bytes: dict[str, int] = {}
        self.reads: dict[str, int] = {}
        self.counting = threading.Lock()  # not `lock`: that name is a FUSE operation

    def _path(self, path: str) -> str:
        return os.path.join(self.source, path.lstrip("/"))

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = os.lstat(self._path(path))
        attrs: dict[str, Any] = {key: getattr(st, key) for key in STAT_KEYS}
        attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
        return attrs

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._path(path))]

    def open(self, path: str, flags: int) -> int:
        if flags & os.O_ACCMODE != os.O_RDONLY:
            raise mfusepy.FuseOSError(errno.EROFS)
        return os.open(self._path(path), os.O_RDONLY)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        data = os.pread(fh, size, offset)
        self.clock.wait(len(data))
        with self.counting:
            self.read_bytes[path] = self.read_bytes.get(path, 0) + len(data)
            self.reads[path] = self.reads.get(path, 0) + 1
        return data

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self._path(path))
        return {key: getattr(st, key) for key in STATVFS_KEYS}

    def destroy(self, path: str) -> None:
        if self.stats_path is not None:
            with self.counting:
                stats = {"bytes": self.read_bytes, "reads": self.reads}
            self.stats_path.write_text(json.dumps(stats, indent=1, sort_keys=True))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("mountpoint", type=Path)
    p.add_argument("--mb-s", type=float, required=True, help="the rate every read shares, in decimal MB a second")
    p.add_argument("--stats", type=Path, help="where to write the bytes and reads per file on unmount (JSON)")
    args = p.parse_args(argv)
    ops = ThrottledMirror(args.source.resolve(), Clock(args.mb_s * 1e6), args.stats)
    mfusepy.FUSE(ops, str(args.mountpoint), foreground=True, ro=True, fsname="throttled")


if __name__ == "__main__":
    main()
