"""The constant shell scripts a POSIX target runs, and the parsers of what the host reports.

The scripts (run, launch, wrap, listeners) take every value as a positional argument, so nothing a
caller passes is ever parsed by a shell; the parsers read /proc/PID/stat lines and nvidia-smi's CSV.
"""

from __future__ import annotations

from typing import NamedTuple

from redline.errors import TargetError
from redline.targets.base import GpuInfo, check_env


class ProcStat(NamedTuple):
    """The fields of /proc/PID/stat that group tracking needs."""

    pid: int
    state: str
    pgid: int
    start_ticks: int


NO_CWD = "redline: no such folder: "  # stderr prefix of the scripts below when cd fails

# Shell scripts are constants; every value reaches them as a positional argument,
# so nothing a caller passes is ever parsed by a shell.
PRELUDE = (
    'cwd=$1; shift; while [ "$1" != -- ]; do export "$1"; shift; done; shift; '
    'if [ -n "$cwd" ]; then cd -- "$cwd" 2>/dev/null || '
    '{ printf "%s%s\\n" "' + NO_CWD + '" "$cwd" >&2; exit 1; }; fi; '
)
RUN_SCRIPT = PRELUDE + 'exec "$@"'
# The group leader is a small sh that records the exit code: the launcher that
# forked it is gone by then, so nobody else could report it.
WRAP_SCRIPT = 'd=$1; shift; "$@"; echo $? >"$d/exit.tmp" && mv -f "$d/exit.tmp" "$d/exit"'
# setsid makes the server its own session and group (pgid == the pid echoed: the
# background child of a non-interactive sh is never a group leader, so setsid does
# not fork); the launcher returns at once and the server outlives redline.
# One exclusive server per target at a time (an engine holds the GPU and its port): under a lock on the
# work folder, any exclusive run whose leader still leads its group (same start time, where recorded)
# makes the target busy, and the launch exits BUSY_EXIT. The lock's fd is not handed to the server.
BUSY_EXIT = 75
# The work folder $w and its runs/ are the caller's alone (a host is shared: another user who could write there could
# plant a run folder that makes the target busy, or swap a file of a run): each is made 0700 where missing, and must
# be a folder (not a link) the caller owns that no one else may write, else PRIVATE_EXIT with its `ls -ldn` line.
PRIVATE_EXIT = 76
PRIVATE = (
    'for f in "$w" "$w/runs"; do (umask 077 && mkdir -p -- "$f") || exit 1; '
    'if [ -L "$f" ] || [ ! -d "$f" ] || [ ! -O "$f" ] || '
    '[ -n "$(find "$f" -prune \\( -perm -020 -o -perm -002 \\) -print)" ]; then '
    'ls -ldn -- "$f" >&2; exit ' + str(PRIVATE_EXIT) + "; fi; done; "
)
BUSY_CHECK = (
    PRIVATE + 'if command -v flock >/dev/null; then exec 9>>"$w/.start.lock" && flock 9 || exit 1; fi; '
    # in a $(subshell): `set --` there leaves the launch's own arguments alone
    'if [ "$x" = 1 ]; then busy=$(for r in "$w"/runs/*/; do '
    '[ -f "$r/exclusive" ] && [ -f "$r/pid" ] && [ ! -f "$r/exit" ] || continue; '
    'p=$(cat "$r/pid"); t=$(cat "$r/ticks" 2>/dev/null); '
    '[ -r "/proc/$p/stat" ] || continue; s=$(sed "s/.*) //" "/proc/$p/stat" 2>/dev/null) || continue; '
    'set -- $s; [ "$3" = "$p" ] && [ "$1" != Z ] && { [ -z "$t" ] || [ "$t" = "${20}" ]; } && '
    '{ printf "%s %s" "$p" "$r"; break; }; '
    'done); if [ -n "$busy" ]; then echo "$busy" >&2; exit ' + str(BUSY_EXIT) + "; fi; fi; "
)
LAUNCH_SCRIPT = (
    "d=$1; log=$2; wrap=$3; w=$4; x=$5; shift 5; "
    + BUSY_CHECK
    + 'mkdir -p -- "$d" "$(dirname -- "$log")" || exit 1; if [ "$x" = 1 ]; then : >"$d/exclusive"; fi; '
    + PRELUDE
    + 'setsid sh -c "$wrap" sh "$d" "$@" >>"$log" 2>&1 </dev/null 9>&- & '
    # pid and start time go into the run folder at once, by the launcher itself: a redline killed right
    # after the launch still left enough there (its job names the folder) to find and stop the server
    'p=$!; echo $p >"$d/pid"; t=$(sed "s/.*) //" "/proc/$p/stat" 2>/dev/null | cut -d" " -f20); '
    'if [ -n "$t" ]; then echo "$t" >"$d/ticks"; fi; echo $p'
)
# The pids with a listening TCP socket on port $1 (IPv4 or IPv6), as far as this user can see them.
LISTENERS_SCRIPT = (
    'h=$(printf "%04X" "$1"); '
    'for i in $(awk -v h=":$h" \'$4 == "0A" && substr($2, length($2) - 4) == h {print $10}\' '
    "/proc/net/tcp /proc/net/tcp6 2>/dev/null); do "
    'find /proc/[0-9]*/fd -maxdepth 1 -lname "socket:\\[$i\\]" 2>/dev/null; echo "inode $i"; done'
)


def not_private(target: str, said: str) -> str:
    """Why target's work folder is refused, from the `ls -ldn` line PRIVATE wrote."""
    return (
        f"the work folder of target {target} is not yours alone ({said.strip()[:300]}): redline keeps its run folders "
        "in a folder it made 0700, that you own and no one else may write (another user could plant a run there "
        "or swap a file of one); remove it, or name a workdir of your own in the targets file"
    )


def env_cwd_args(env: dict[str, str] | None, cwd: str | None) -> list[str]:
    """The positional arguments PRELUDE reads: cwd, KEY=VALUE..., then `--`."""
    check_env(env or {})
    return [cwd or "", *(f"{k}={v}" for k, v in (env or {}).items()), "--"]


def parse_stats(text: str) -> list[ProcStat]:
    """Parse /proc/PID/stat lines; comm may hold spaces and parens, so split at the last ')'."""
    out = []
    for line in text.splitlines():
        head, _, tail = line.rpartition(")")
        fields = tail.split()
        try:
            out.append(ProcStat(int(head.split(" ", 1)[0]), fields[0], int(fields[2]), int(fields[19])))
        except (ValueError, IndexError):
            continue  # a process that vanished mid-read, or a comm with a newline
    return out


def parse_gpus(text: str) -> list[GpuInfo]:
    """Parse `nvidia-smi --query-gpu=name,memory.total[,uuid] --format=csv,noheader,nounits`."""
    return [_parse_gpu(line) for line in filter(None, map(str.strip, text.splitlines()))]


def _parse_gpu(line: str) -> GpuInfo:
    # Split from the right, since a name could hold a comma. A uuid (GPU-..., MIG-...) is
    # never a bare number, so a numeric last column is the two-column form.
    splits = 1 if line.rpartition(",")[2].strip().isdigit() else 2
    try:
        name, mib, *uuid = (part.strip() for part in line.rsplit(",", splits))
        known = [u for u in uuid if u not in ("", "[N/A]")]
        return GpuInfo(name=name, memory_mib=int(mib), uuid=known[0] if known else None)
    except ValueError as exc:
        raise TargetError(f"cannot read nvidia-smi GPU line {line!r}") from exc
