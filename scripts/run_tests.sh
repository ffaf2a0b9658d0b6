#!/usr/bin/env bash
# Run the test suite; pytest exits 5 when it collects nothing, which we treat as failure.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -m pytest -q -p no:cacheprovider "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "no tests were collected" >&2
  exit 1
fi
exit "$status"
