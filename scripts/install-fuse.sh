#!/usr/bin/env bash
# Installs FUSE 3 (Debian's fuse3: libfuse3 and fusermount3) for tests/server/test_real_vllm_slow_load.py, which
# mounts a model folder through a throttled FUSE filesystem (tests/server/throttled_fs.py, on mfusepy). Idempotent:
# nothing to do where fusermount3 is already there; needs root for apt-get (CI runs as root).
set -euo pipefail
if command -v fusermount3 >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install-fuse: fusermount3 is missing; install it (apt-get install fuse3) and run this again" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y fuse3
fusermount3 --version
