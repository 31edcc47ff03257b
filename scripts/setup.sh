#!/usr/bin/env bash
# Idempotent set-up on a machine with Rust and Node: npm dependencies, the
# release addon, the compiled TypeScript layer. Each step is skipped when its
# output is newer than its inputs, so the second run costs seconds.
#
# The addon is built for glibc 2.17 (x86_64-unknown-linux-gnu.2.17) with
# cargo-zigbuild and zig, so it loads on any Linux from 2012 on (RHEL 7,
# Debian 8, Ubuntu 14.04). Both are installed here on first use (the versions
# tested): zig from the
# `ziglang` PyPI package (about 10 s), cargo-zigbuild from crates.io (about
# 100 s of compiling). Without Python or on another host, it falls back to a
# plain host build, which needs the host's glibc (it says so).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== npm ci"
  npm ci --no-audit --no-fund
fi

has_zig() { command -v zig >/dev/null 2>&1 || python3 -m ziglang version >/dev/null 2>&1; }

# Prints the napi build flags for the most portable build this machine can do.
build_flags() {
  if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "--platform --release"
    return
  fi
  if ! has_zig && command -v python3 >/dev/null 2>&1; then
    echo "== pip install ziglang (zig, for the glibc 2.17 build)" >&2
    python3 -m pip install --quiet "ziglang==0.17.1" >&2 || true
  fi
  if ! command -v cargo-zigbuild >/dev/null 2>&1 && has_zig; then
    echo "== cargo install cargo-zigbuild (once, about 100 s)" >&2
    cargo install --quiet cargo-zigbuild@0.24.1 --locked >&2 || true
  fi
  if has_zig && command -v cargo-zigbuild >/dev/null 2>&1; then
    echo "--platform --release --target x86_64-unknown-linux-gnu.2.17 --cross-compile"
  else
    echo "!! zig or cargo-zigbuild unavailable: building for this host's glibc instead of 2.17" >&2
    echo "--platform --release"
  fi
}

addon=loopx-hooks.linux-x64-gnu.node
if [ ! -f "$addon" ] || [ -n "$(find src Cargo.toml Cargo.lock build.rs -newer "$addon" -print -quit)" ]; then
  flags=$(build_flags)
  echo "== napi build $flags"
  # shellcheck disable=SC2086 # the flags are words
  npx napi build $flags
  # napi rewrote the loader: put back the platform error (scripts/loader.mjs).
  node scripts/loader.mjs
fi

# tsc never deletes an output: a source removed from lib/ would leave its .js
# and .d.ts in dist/, and they would ship. Drop those whose source is gone.
if [ -d dist ]; then
  find dist \( -name '*.js' -o -name '*.d.ts' \) -print | while IFS= read -r out; do
    rel=${out#dist/}
    rel=${rel%.d.ts}
    rel=${rel%.js}
    [ -f "lib/$rel.ts" ] || rm -f -- "$out"
  done
fi

# tsc -b compiles bindings/ beside its sources (tsconfig.bindings.json) and
# lib/ into dist/ (tsconfig.build.json). The inputs are the .ts files that are
# not declarations (plus the napi declarations it reads), and the stamp is
# touched after tsc, so its own outputs never count as newer.
stamp=dist/.tsc-stamp
if [ ! -f "$stamp" ] || [ ! -f dist/index.js ] || [ ! -f bindings/index.d.ts ] \
  || [ -n "$(find lib bindings -name '*.ts' ! -name '*.d.ts' -newer "$stamp" -print -quit)" ] \
  || [ -n "$(find index.d.ts tsconfig.base.json tsconfig.build.json tsconfig.bindings.json -newer "$stamp" -print -quit)" ]; then
  echo "== tsc (lib into dist)"
  npx tsc -b tsconfig.build.json
  touch "$stamp"
fi
