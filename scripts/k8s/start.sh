#!/usr/bin/env bash
# Starts redline's one-node test cluster from the built binaries: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler (control plane on 127.0.0.1), containerd + runc, the
# local busybox/pause images, and a kubelet; waits for the node Ready and writes $K8S_STATE/env.
# Assumes nothing of ours is running (scripts/k8s-cluster up checks that first). Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
S=$K8S_STATE
KUBECTL=$K8S_BIN/kubectl
KUBECONFIG_FILE=$S/kubeconfig
SOCK=$S/containerd/containerd.sock
T0=$(date +%s%N)

elapsed() {
  local ds=$((($(date +%s%N) - T0) / 100000000))
  echo "$((ds / 10)).$((ds % 10))"
}
log() { echo "k8s: [$(elapsed) s] $*"; }
fail() {
  echo "k8s: FAILED: $1" >&2
  [ -n "${2:-}" ] && [ -f "$S/logs/$2.log" ] && tail -n 30 "$S/logs/$2.log" >&2
  exit 1
}
# start NAME ARGV...: a daemon in its own session (it outlives this script), log and pid in $S.
start() {
  local name=$1
  shift
  setsid "$@" >"$S/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$S/pids/$name.pid"
}
alive() { [ -f "$S/pids/$1.pid" ] && { tr '\0' ' ' <"/proc/$(cat "$S/pids/$1.pid")/cmdline"; } 2>/dev/null | grep -qF "$S/"; }
# wait_until SECONDS NAME CMD...: poll CMD until it succeeds; fail early when NAME's process died.
wait_until() {
  local timeout=$1 name=$2 deadline
  shift 2
  deadline=$(($(date +%s) + timeout))
  until "$@" >/dev/null 2>&1; do
    alive "$name" || fail "$name exited" "$name"
    [ "$(date +%s)" -lt "$deadline" ] || fail "$name not ready after ${timeout}s" "$name"
    sleep 0.2
  done
}
render() {
  sed -e "s#@STATE@#$S#g" -e "s#@NODE_IP@#$K8S_NODE_IP#g" -e "s#@PAUSE_IMAGE@#$K8S_PAUSE_IMAGE#g" \
    -e "s#@POD_BRIDGE@#$K8S_POD_BRIDGE#g" -e "s#@POD_SUBNET@#$K8S_POD_SUBNET#g" "$HERE/config/$1" >"$2"
}

rm -rf "$S/logs" "$S/pids"
mkdir -p "$S"/{certs,logs,pids,etcd,cni/net.d,cni/ipam,containerd,kubelet,kubelet-static,images}
chmod 700 "$S" "$S/certs"

# The node IP: alone on an empty bridge (the kubelet refuses loopback; this kernel has no `dummy`).
if ! ip link show "$K8S_NODE_BRIDGE" >/dev/null 2>&1; then
  ip link add "$K8S_NODE_BRIDGE" type bridge
  ip addr add "$K8S_NODE_IP/32" dev "$K8S_NODE_BRIDGE"
fi
ip link set "$K8S_NODE_BRIDGE" up

# Credentials: a service-account signing key and one admin token, fresh for every cluster.
[ -f "$S/certs/sa.key" ] || openssl genrsa -out "$S/certs/sa.key" 2048 2>/dev/null
openssl rsa -in "$S/certs/sa.key" -pubout -out "$S/certs/sa.pub" 2>/dev/null
TOKEN=$(openssl rand -hex 24)
echo "$TOKEN,redline-admin,redline-admin,system:masters" >"$S/certs/tokens.csv"
umask 077
cat >"$KUBECONFIG_FILE" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $K8S_CONTEXT
  cluster: {server: "https://127.0.0.1:$K8S_APISERVER_PORT", insecure-skip-tls-verify: true}
users:
- name: redline-admin
  user: {token: $TOKEN}
contexts:
- name: $K8S_CONTEXT
  context: {cluster: $K8S_CONTEXT, user: redline-admin}
current-context: $K8S_CONTEXT
KC
umask 022
K=("$KUBECTL" --kubeconfig="$KUBECONFIG_FILE" --context="$K8S_CONTEXT")

# Control plane.
E=http://127.0.0.1:$K8S_ETCD_CLIENT_PORT
start etcd etcd --name redline --data-dir "$S/etcd" \
  --listen-client-urls "$E" --advertise-client-urls "$E" \
  --listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
  --initial-cluster "redline=http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
  --listen-metrics-urls "http://127.0.0.1:$K8S_ETCD_METRICS_PORT"
wait_until 60 etcd env ETCDCTL_API=3 etcdctl --endpoints="$E" endpoint health
start apiserver "$K8S_BIN/kube-apiserver" --etcd-servers="$E" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$K8S_APISERVER_PORT" --insecure-port=0 \
  --cert-dir="$S/certs" --token-auth-file="$S/certs/tokens.csv" --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$S/certs/sa.pub" --service-account-signing-key-file="$S/certs/sa.key" \
  --service-cluster-ip-range="$K8S_SERVICE_RANGE" --allow-privileged=true \
  --kubelet-preferred-address-types=InternalIP --profiling=false
wait_until 120 apiserver "${K[@]}" get --raw=/readyz
start controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG_FILE" \
  --leader-elect=false --port=0 --secure-port=0 --profiling=false \
  --service-account-private-key-file="$S/certs/sa.key" --use-service-account-credentials=false \
  --controllers='*,-nodeipam,-ttl,-bootstrapsigner,-tokencleaner,-csrsigning'
start scheduler "$K8S_BIN/kube-scheduler" --kubeconfig="$KUBECONFIG_FILE" \
  --leader-elect=false --port=0 --secure-port=0 --profiling=false
log "control plane up (apiserver https://127.0.0.1:$K8S_APISERVER_PORT)"

# Node: containerd with its own root and socket, the local images, the kubelet.
render containerd.toml "$S/containerd/config.toml"
render cni.conflist "$S/cni/net.d/10-redline.conflist"
render kubelet-config.yaml "$S/kubelet-config.yaml"
start containerd containerd --config "$S/containerd/config.toml"
wait_until 60 containerd ctr -a "$SOCK" version
python3 "$HERE/images/mkimage.py" "$K8S_IMAGE" '["/bin/sh"]' "$S/images/busybox.tar" >/dev/null
python3 "$HERE/images/mkimage.py" "$K8S_PAUSE_IMAGE" \
  '["/bin/sh","-c","trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait; done"]' "$S/images/pause.tar" >/dev/null
for i in busybox pause; do ctr -a "$SOCK" -n k8s.io images import "$S/images/$i.tar" >/dev/null; done
[ -d /var/log/pods ] || touch "$S/created-var-log-pods"  # the kubelet writes container logs there
start kubelet "$K8S_BIN/kubelet" --kubeconfig="$KUBECONFIG_FILE" --config="$S/kubelet-config.yaml" \
  --container-runtime=remote --container-runtime-endpoint="unix://$SOCK" \
  --root-dir="$S/kubelet" --cert-dir="$S/kubelet/pki" \
  --hostname-override="$K8S_NODE_NAME" --node-ip="$K8S_NODE_IP" --v=1
node_ready() {
  [ "$("${K[@]}" get node "$K8S_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
wait_until 180 kubelet node_ready
log "node $K8S_NODE_NAME Ready ($K8S_NODE_IP)"
# Pods are refused until the controller-manager has made the namespace's default service account.
wait_until 60 controller-manager "${K[@]}" -n default get serviceaccount default

cat >"$S/env" <<ENV
# Written by scripts/k8s-cluster up; read by tests/k8s/conftest.py (and by \`. $S/env\`).
REDLINE_K8S_KUBECONFIG=$KUBECONFIG_FILE
REDLINE_K8S_CONTEXT=$K8S_CONTEXT
REDLINE_K8S_NODE=$K8S_NODE_NAME
REDLINE_K8S_NODE_IP=$K8S_NODE_IP
REDLINE_K8S_KUBECTL=$KUBECTL
REDLINE_K8S_HELM=$HELM_DIR/helm
REDLINE_K8S_IMAGE=$K8S_IMAGE
REDLINE_K8S_POD_SUBNET=$K8S_POD_SUBNET
REDLINE_K8S_VERSION=$K8S_VERSION
ENV
log "cluster ready; env file $S/env"
