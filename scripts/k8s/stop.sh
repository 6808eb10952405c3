#!/usr/bin/env bash
# Stops everything scripts/k8s/start.sh started, by the PIDs it recorded, and cleans up after it:
# pods first (so the kubelet tears their networks down), then the kubelet and the control plane,
# containerd and its leftover shims, mounts under the state dir, the bridges, empty cgroups and
# network namespaces of our pods. Keeps $K8S_STATE/logs for a post-mortem; removes the rest.
set -uo pipefail
T0=$(date +%s)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
S=$K8S_STATE
SOCK=$S/containerd/containerd.sock
[ -d "$S" ] || exit 0
K=("$K8S_BIN/kubectl" --kubeconfig="$S/kubeconfig" --context="$K8S_CONTEXT" --request-timeout=10s)

pid_of() { [ -f "$S/pids/$1.pid" ] && cat "$S/pids/$1.pid"; }
# A recorded PID counts only while its command line still names the state dir (all of ours do):
# after a reboot the number may belong to someone else.
alive() { local p; p=$(pid_of "$1") && { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF "$S/"; }
# stop NAME...: SIGTERM each recorded PID, wait up to 15 s, then SIGKILL what is left.
stop() {
  local n p i
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

# 1. Workloads, through the API while the kubelet still runs: it stops the containers and
#    releases each pod's network (CNI DEL).
if alive apiserver && alive kubelet && [ -x "$K8S_BIN/kubectl" ]; then
  "${K[@]}" delete deployments,statefulsets,daemonsets,replicasets,jobs --all --all-namespaces --wait=false >/dev/null 2>&1
  "${K[@]}" delete pods --all --all-namespaces --grace-period=2 --wait=true --timeout=60s >/dev/null 2>&1
fi
stop kubelet scheduler controller-manager

# 2. Whatever containers are left (the kubelet was down, or a pod hung): kill them through containerd.
if alive containerd; then
  for t in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1
  done
  sleep 1
  for t in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr -a "$SOCK" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1
  done
  for c in $(ctr -a "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
    ctr -a "$SOCK" -n k8s.io containers delete "$c" >/dev/null 2>&1
  done
fi
stop apiserver
stop etcd containerd

# 3. Shims our containerd started outlive it; they name our socket on their command line.
for d in /proc/[0-9]*; do
  cmd=$({ tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
  case "$cmd" in *containerd-shim*"$SOCK"*) kill -9 "${d#/proc/}" 2>/dev/null ;; esac
done

# 4. Mounts under the state dir (overlay rootfs, sandbox shm, kubelet secret volumes), deepest first.
awk -v s="$S/" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
done

# 5. Network: our pods' namespaces (CNI names them cni-*; only those no process uses), the bridges.
for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
  [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && ip netns delete "$ns" 2>/dev/null
done
for br in "$K8S_POD_BRIDGE" "$K8S_NODE_BRIDGE"; do ip link delete "$br" 2>/dev/null; done

# 6. The kubelet's cgroups (kubepods/...), now empty, deepest first; its container log dir.
for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice; do
  [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -f "$S/created-var-log-pods" ]; then rm -rf /var/log/pods /var/log/containers; fi
rmdir /run/containerd/runc/k8s.io /run/containerd/runc /run/containerd 2>/dev/null

# 7. State, keeping the logs.
find "$S" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + 2>/dev/null
echo "k8s: cluster stopped in $(($(date +%s) - T0)) s (logs kept in $S/logs)"
exit 0
