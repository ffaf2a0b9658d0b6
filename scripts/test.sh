#!/usr/bin/env bash
# Set up .venv (if needed) and run the whole test suite. This is what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
bash scripts/run_tests.sh "$@"
