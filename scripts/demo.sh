#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
node demo/run.mjs
node demo/goal.mjs
node demo/turn_start.mjs
