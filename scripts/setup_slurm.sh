#!/usr/bin/env bash
# Install SLURM and munge for tests/hpc/ (a real single-node SLURM that the tests start and stop themselves,
# see tests/hpc/slurm_node.py). Called by .ci/run before scripts/test.sh. Only as root on a machine with
# apt-get; otherwise it does nothing (and tests/hpc/ skips, or fails when CI is set). Quiet; prints one line
# with the time it took. Idempotent: nothing is installed when the binaries are already there.
set -euo pipefail
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_slurm: not root or no apt-get; skipping the SLURM install" >&2
  exit 0
fi
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 \
   && command -v sbatch >/dev/null 2>&1; then
  echo "setup_slurm: slurm-wlm and munge already installed" >&2
  exit 0
fi
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
echo "setup_slurm: installed slurm-wlm and munge in $(( $(date +%s) - start )) s" >&2
