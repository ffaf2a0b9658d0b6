#!/usr/bin/env bash
# The main job on an embedded default: set up .venv, simulate a Trunk store (LOL paper, Fig. 2B) with few samples
# for its width (n = 200, p = 20 000, mean-difference scale b = 3), cross-validate LOL against PCA and rrLDA from
# one pass over it, print the table, write the plot and the run's self-contained HTML report (demo-output/report.html).
# LOL reaches its best error (~0.05) at d = 1; PCA, whose top directions follow the largest variance rather than the
# class difference, needs d ~ 8 to get there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
OUT=${WIDEML_DEMO_DIR:-demo-output}
mkdir -p "$OUT"
W=.venv/bin/wideml
$W simulate trunk --n-samples 200 --n-features 20000 -P b=3 --seed 1 -o "$OUT/trunk.zarr" --overwrite
$W info "$OUT/trunk.zarr"
$W cv "$OUT/trunk.zarr" --methods lol,pca,rrlda --max-dim 20 --folds 10 \
   -o "$OUT/cv_trunk.json" --plot "$OUT/cv_trunk.png" --report "$OUT/report.html" --overwrite
