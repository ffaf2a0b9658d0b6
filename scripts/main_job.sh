#!/usr/bin/env bash
# The main job on an embedded default: set up .venv, simulate a Trunk store (LOL paper, Fig. 2B),
# cross-validate LOL against PCA and rrLDA from one pass over it, print the table, write the plot.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
OUT=${WIDEML_DEMO_DIR:-demo-output}
mkdir -p "$OUT"
W=.venv/bin/wideml
$W simulate trunk --n-samples 400 --n-features 50000 --seed 1 -o "$OUT/trunk.zarr" --overwrite
$W info "$OUT/trunk.zarr"
$W cv "$OUT/trunk.zarr" --methods lol,pca,rrlda --max-dim 20 --folds 10 \
   -o "$OUT/cv_trunk.json" --plot "$OUT/cv_trunk.png" --overwrite
