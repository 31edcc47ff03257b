#!/usr/bin/env bash
# House habits, checked before any test runs: rustfmt and clippy for Rust,
# Prettier and ESLint (type-aware) for TypeScript and JavaScript.
# `npm run fix` applies the formatters.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt --check"
cargo fmt --check
echo "== cargo clippy"
cargo clippy --all-targets --quiet -- -D warnings
echo "== prettier --check"
npx prettier --check --log-level warn .
echo "== eslint"
npx eslint --max-warnings 0 .
