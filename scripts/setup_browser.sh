#!/usr/bin/env bash
# Install Debian's chromium for tests/report/ (the HTML report opened in a real headless browser, see
# tests/report/browser.py). Called by .ci/run before scripts/test.sh. Only as root on a machine with apt-get;
# otherwise it does nothing (and the browser test skips, or fails when CI is set). Quiet; prints one line with
# the time it took. Idempotent: nothing is installed when chromium is already there.
set -euo pipefail
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_browser: not root or no apt-get; skipping the chromium install" >&2
  exit 0
fi
if command -v chromium >/dev/null 2>&1; then
  echo "setup_browser: chromium already installed" >&2
  exit 0
fi
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "setup_browser: installed chromium in $(( $(date +%s) - start )) s" >&2
