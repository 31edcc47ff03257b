#!/usr/bin/env bash
# Idempotent set-up on a machine with Rust and Node: npm dependencies, the
# release addon, the compiled TypeScript layer. Each step is skipped when its
# output is newer than its inputs, so the second run costs seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== npm ci"
  npm ci --no-audit --no-fund
fi

addon=loopx-hooks.linux-x64-gnu.node
if [ ! -f "$addon" ] || [ -n "$(find src Cargo.toml Cargo.lock build.rs -newer "$addon" -print -quit)" ]; then
  echo "== napi build --release"
  npx napi build --platform --release
fi

if [ ! -f lib/index.js ] || [ -n "$(find lib bindings index.d.ts -name '*.ts' -newer lib/index.js -print -quit)" ]; then
  echo "== tsc (lib)"
  npx tsc -p tsconfig.build.json
fi
