"""A file redline writes onto a target, in the place a server's benches run (its host, its pod, its job): a trace
bench's requests, beside its result. Through `Target.run` alone (every kind has it), in pieces a command line holds,
then renamed whole, so the bench client never reads half a file.

    await put_text(target, handle, posixpath.join(handle.run_dir, "bench-chat-x1.trace.jsonl"), text)
"""

from __future__ import annotations

from redline.errors import TargetError
from redline.targets import ServerHandle, Target

PIECE = 96 << 10  # characters per command: under Linux's 128 KiB for one argument
FIRST = 'printf %s "$1" > "$2.tmp"'
MORE = 'printf %s "$1" >> "$2.tmp"'
DONE = 'mv "$1.tmp" "$1"'


async def put_text(target: Target, handle: ServerHandle, path: str, text: str) -> None:
    """Write `text` to `path` on the target, where the server's benches run; TargetError where it could not."""
    pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)] or [""]
    for n, piece in enumerate(pieces):
        wrote = await target.run(
            ["sh", "-c", FIRST if n == 0 else MORE, "sh", piece, path], timeout_s=60, server=handle
        )
        if wrote.returncode != 0:
            raise TargetError(f"could not write {path} on target {target.name}: {wrote.stderr.strip()[:200]}")
    moved = await target.run(["sh", "-c", DONE, "sh", path], timeout_s=60, server=handle)
    if moved.returncode != 0:
        raise TargetError(f"could not write {path} on target {target.name}: {moved.stderr.strip()[:200]}")


__all__ = ["put_text"]
