#!/usr/bin/env bash
# Create .venv (if missing) and install wideml with its dev, plot and docs extras (docs: the docs build is a test). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e ".[dev,plot,docs]"
