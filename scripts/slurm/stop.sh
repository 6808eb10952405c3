#!/usr/bin/env bash
# Stops everything scripts/slurm/start.sh started, by the PIDs it recorded, in the only order that does
# not hang: jobs first (cancelled while slurmctld and munged still run, or slurmstepd retries its
# completion forever and slurmd ignores SIGTERM), then the slurmds, slurmctld, slurmdbd, MariaDB and
# munged; then the namespaces and the bridge. Keeps $SLURM_STATE/logs, the database and the munge key.
set -uo pipefail
T0=$(date +%s)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
S=$SLURM_STATE
[ -d "$S/pids" ] || exit 0
export SLURM_CONF=$S/etc/slurm.conf

pid_of() { [ -f "$S/pids/$1.pid" ] && cat "$S/pids/$1.pid"; }
# A recorded PID counts only while its command line or environment names the state dir (every daemon's
# does: slurmdbd finds its config through SLURM_CONF): after a reboot the number may be another's.
alive() {
  local p
  p=$(pid_of "$1") || return 1
  # grep reads it all (no -q): under pipefail an early exit would fail the pipe with SIGPIPE
  cat "/proc/$p/cmdline" "/proc/$p/environ" 2>/dev/null | tr '\0' '\n' | grep -F "$S/" >/dev/null
}
stop() {
  local n i p
  for n in "$@"; do alive "$n" && kill "$(pid_of "$n")" 2>/dev/null; done
  for i in $(seq 75); do
    p=0
    for n in "$@"; do alive "$n" && p=1; done
    [ $p = 0 ] && break
    sleep 0.2
  done
  for n in "$@"; do alive "$n" && kill -9 "$(pid_of "$n")" 2>/dev/null; done
  for n in "$@"; do rm -f "$S/pids/$n.pid"; done
}

if alive slurmctld; then
  scancel --full --quiet --partition="$SLURM_PARTITION,$SLURM_SHORT_PARTITION" 2>/dev/null
  for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
fi
stop $(for n in $SLURM_NODES; do echo "slurmd-$n"; done)
# A slurmd that never registered wrote no PID file: found by its command line, which names our config.
for d in /proc/[0-9]*; do
  cmd=$({ tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
  case "$cmd" in "/usr/sbin/slurmd -f $SLURM_CONF "*) kill -9 "${d#/proc/}" 2>/dev/null ;; esac
done
stop slurmctld
stop slurmdbd
stop mariadb
stop munged
for n in $SLURM_NODES; do
  ip netns delete "redline-slurm-$n" 2>/dev/null
  ip link delete "rls-$n" 2>/dev/null
done
ip link delete "$SLURM_BRIDGE" 2>/dev/null
# The job cgroups slurmd made (slurm/uid_*/job_*), now empty, deepest first.
for c in /sys/fs/cgroup/*/slurm; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null; done
rm -rf "$S/ctld" "$S/spool" "$S/pids" "$S/env" "$S/munge/munge.socket"*
echo "slurm: cluster stopped in $(($(date +%s) - T0)) s (logs kept in $S/logs)"
exit 0
