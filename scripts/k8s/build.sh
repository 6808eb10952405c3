#!/usr/bin/env bash
# Builds kubelet, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl v1.20.2
# from Debian bookworm's `kubernetes` source package into $K8S_BIN (once per machine; about
# 8-9 min on 2 cores). A finished build leaves $K8S_BIN/.complete; the source tree and Go's
# build cache (about 3 GB) are removed afterwards unless KEEP_SRC=1.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
if [ -f "$K8S_BIN/.complete" ]; then echo "k8s binaries already built in $K8S_BIN"; exit 0; fi
mkdir -p "$K8S_CACHE"
exec 9>"$K8S_CACHE/.build.lock"
flock 9  # a second clone building at the same time waits for this one
if [ -f "$K8S_BIN/.complete" ]; then echo "k8s binaries already built in $K8S_BIN"; exit 0; fi
W=$K8S_CACHE/build-src
rm -rf "$W"
mkdir -p "$W/apt/lists/partial" "$W/apt/cache/archives/partial" "$W/apt/parts"
T0=$(date +%s)
# deb-src twins of this machine's own Debian sources (deb822 or one-line format), in a private apt dir.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$W/apt/parts/debian-src.sources"
else
  grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -i debian |
    sed 's/^deb /deb-src /' >"$W/apt/parts/debian-src.list"
fi
APTO=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$W/apt/parts" -o "Dir::State::Lists=$W/apt/lists"
  -o "Dir::Cache=$W/apt/cache")
apt-get "${APTO[@]}" update >/dev/null
(cd "$W" && apt-get "${APTO[@]}" source --download-only "kubernetes=$K8S_DEB_VERSION" >/dev/null)
(cd "$W" && dpkg-source -x "kubernetes_${K8S_DEB_VERSION}.dsc" k8s >/dev/null)
# The vendored reflect2 predates Go 1.18 and crashes at runtime with Debian's Go; use Debian's packaged one.
R=$W/k8s/vendor/github.com/modern-go/reflect2
rm -f "$R"/*.go "$R"/*.s && cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.{go,s} "$R/"
T1=$(date +%s)
echo "k8s build: source ready in $((T1 - T0)) s; compiling (log: $W/build.log)"
cd "$W/k8s"
if ! env GOPROXY=off GOFLAGS=-mod=vendor CGO_ENABLED=0 HOME="$W/home" GOPATH="$W/home/go" \
  KUBE_GIT_VERSION=$K8S_VERSION KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 KUBE_GIT_TREE_STATE=clean \
  make WHAT="cmd/kubelet cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager cmd/kubectl" \
  >"$W/build.log" 2>&1; then
  tail -n 40 "$W/build.log" >&2
  echo "k8s build failed; full log: $W/build.log" >&2
  exit 1
fi
rm -rf "$K8S_BIN.tmp" && mkdir -p "$K8S_BIN.tmp"
cp _output/bin/kubelet _output/bin/kube-apiserver _output/bin/kube-scheduler _output/bin/kube-controller-manager \
  _output/bin/kubectl "$K8S_BIN.tmp/"
"$K8S_BIN.tmp/kubectl" version --client --short >/dev/null
touch "$K8S_BIN.tmp/.complete"
rm -rf "$K8S_BIN" && mv "$K8S_BIN.tmp" "$K8S_BIN"
T2=$(date +%s)
echo "k8s build: compiled in $((T2 - T1)) s ($((T2 - T0)) s in all) into $K8S_BIN"
cd /
if [ "${KEEP_SRC:-0}" != 1 ]; then chmod -R u+w "$W" 2>/dev/null || true; rm -rf "$W"; fi
