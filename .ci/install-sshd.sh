#!/usr/bin/env bash
# Install the OpenSSH server and client that the SSH target tests run against.
# Idempotent and non-interactive; needs root (CI runs as root).
set -euo pipefail
if [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y openssh-server openssh-client
