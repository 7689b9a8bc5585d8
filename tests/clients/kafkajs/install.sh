#!/usr/bin/env bash
# Install kafkajs (pinned) from npm into a cache directory outside the source
# tree, for tests/broker/clients.rs. Prints the node_modules directory to use as
# NODE_PATH.
#
# Usage: tests/clients/kafkajs/install.sh [DIR]
#   DIR defaults to ${PINLOG_KAFKAJS_DIR:-$HOME/.cache/pinlog/kafkajs-$VERSION}
# Idempotent: a second run only prints the directory. Needs node and npm.
set -euo pipefail

KAFKAJS_VERSION=2.2.4
dir=${1:-${PINLOG_KAFKAJS_DIR:-$HOME/.cache/pinlog/kafkajs-$KAFKAJS_VERSION}}
modules="$dir/node_modules"
if [ -f "$modules/kafkajs/package.json" ] &&
   grep -q "\"version\": \"$KAFKAJS_VERSION\"" "$modules/kafkajs/package.json"; then
  echo "$modules"
  exit 0
fi
command -v npm >/dev/null || { echo "npm is required: apt-get install npm" >&2; exit 1; }
mkdir -p "$dir"
log="$dir/npm-install.log"
if ! (cd "$dir" && npm install --no-audit --no-fund --no-save --prefix "$dir" \
        "kafkajs@$KAFKAJS_VERSION") >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
echo "$modules"
