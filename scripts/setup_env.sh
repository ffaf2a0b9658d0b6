#!/usr/bin/env bash
# Create .venv (if missing) and install wideml with its dev, plot and docs extras (docs: the docs build is a test). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
start=$(date +%s)
.venv/bin/python -m pip install --quiet -e ".[dev,plot,docs]"
# the resolver's time (issue 27: the s3 extra's pins must resolve without backtracking); a fresh install is ~3 min
echo "setup_env: pip resolved and installed wideml[dev,plot,docs] in $(( $(date +%s) - start )) s" >&2
