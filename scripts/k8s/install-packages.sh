#!/usr/bin/env bash
# Installs the Debian packages the cluster needs (and, with --build, those the build needs).
# Skips apt entirely when they are all there already. Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/env.sh"
pkgs=$K8S_PACKAGES_RUN
[ "${1:-}" = --build ] && pkgs="$pkgs $K8S_PACKAGES_BUILD"
missing=()
for p in $pkgs; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "k8s: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# containerd's package would start its own daemon through the init system; there is none here, and
# ours runs with its own config. policy-rc.d keeps the maintainer scripts from starting services.
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && created_policy=1
fi
trap '[ $created_policy = 0 ] || rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
