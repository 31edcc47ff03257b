#!/usr/bin/env bash
# Every test: the format checks and linters (scripts/lint.sh), Rust unit tests, the addon build, the vitest suite (which also
# checks generated files for drift and packs the package), and the type check
# of the tests and typed examples, and the Python adapter's unittest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/lint.sh
echo "== cargo test"
cargo test --quiet
echo "== tsc --noEmit"
npx tsc -p tsconfig.json --noEmit
echo "== vitest"
npx vitest run
echo "== python (the adapter over serve --stdio)"
python3 -m unittest discover -s python/tests -v
