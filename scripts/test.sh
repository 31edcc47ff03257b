#!/usr/bin/env bash
# Every test: the format checks and linters (scripts/lint.sh), Rust unit tests, the addon build, the vitest suite (which also
# checks generated files for drift and packs the package), and the type check
# of the tests and typed examples, part of the vitest suite again on Node.js 22
# and 24 (scripts/node-matrix.sh, which names the specs and why), and the Python
# adapter's unittest suite.
# One throwaway PostgreSQL server (scripts/pg-server.mjs, which installs the
# server package first when it is missing) serves cargo test, vitest and
# python through LOOPX_TEST_PG_URL / LOOPX_TEST_PG_DIR (and LOOPX_TEST_PG_CA, the
# CA of its TLS certificate), and is stopped and removed on exit; a
# LOOPX_TEST_PG_URL set by the caller is used instead (with its LOOPX_TEST_PG_CA).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/lint.sh
if [ -z "${LOOPX_TEST_PG_URL:-}" ]; then
  echo "== PostgreSQL (throwaway server)"
  pg_env="$(node scripts/pg-server.mjs start --env)"
  eval "$pg_env"
  export LOOPX_TEST_PG_URL LOOPX_TEST_PG_DIR LOOPX_TEST_PG_CA
  trap 'node scripts/pg-server.mjs stop "$LOOPX_TEST_PG_DIR"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  echo "$LOOPX_TEST_PG_URL"
fi
echo "== cargo test"
cargo test --quiet
echo "== tsc --noEmit"
npx tsc -p tsconfig.json --noEmit
echo "== vitest"
npx vitest run
bash scripts/node-matrix.sh test
echo "== python (the adapter over serve --stdio)"
python3 -m unittest discover -s python/tests -v
