#!/usr/bin/env bash
# Installs the MCP Inspector's CLI into .inspector/ (git-ignored), for tests/server/test_inspector.py.
# The Inspector needs Node >= 22: the npm registry's `node` package brings that binary, so any npm
# does. Idempotent: a stamp names the versions installed; a run with the same versions does nothing.
# Run its CLI as docs/mcp.md shows, from inspector/cli/build/index.js (the separate inspector-cli
# package, and the mcp-inspector --cli wrapper, look for a package.json that is not there).
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_VERSION=22.23.3
INSPECTOR_VERSION=0.21.1
dir=.inspector
stamp="$dir/.installed-node-$NODE_VERSION-inspector-$INSPECTOR_VERSION"
[ -f "$stamp" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "install-inspector: npm is missing; install it (apt-get install npm) and run this again" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y npm
fi
mkdir -p "$dir"
rm -f "$dir"/.installed-*
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    "node@$NODE_VERSION" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
"$dir/node_modules/.bin/node" -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)'
touch "$stamp"
