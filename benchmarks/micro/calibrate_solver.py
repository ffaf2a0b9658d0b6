"""Fit the constants of the solver="auto" cost model (wideml/estimators/gram/solver.py) to measured grid times.

Reads the part-B grid of ``scaling_solvers_b.json`` (or the file given), fits each solver's
constants by non-negative least squares on relative error (every row divided by its measured
time, so a 5 s fit counts as much as a 70 s one), and prints them with the in-sample
predictions. Check them out of sample with ``scaling_solvers.py --part D``.

Usage: python benchmarks/micro/calibrate_solver.py [results/scaling_solvers_b.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import RESULTS


def features(row: dict, n_power_iter: int = 1, n_oversamples: int = 10, itemsize: int = 4):
    n, p, d = row["n"], row["p"], row["d"]
    gb = n * p * itemsize / 1e9
    width = min(n, d + n_oversamples)
    gram = [2 * gb, n * n * p, n**3, n * d * p]  # per-GB pass cost, Gram product, n x n algebra, emit product
    randomized = [(n_power_iter + 2) * gb, (n_power_iter + 2) * 2 * n * width * p, p * width]  # + test-matrix generation
    return gram, randomized


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS / "scaling_solvers_b.json"
    res = json.loads(path.read_text())
    rows = res.get("B_auto_grid", res)["grid"]
    out = {}
    for k, name in enumerate(("gram", "randomized")):
        A = np.array([features(r)[k] for r in rows], dtype=float)
        t = np.array([r[name] for r in rows])
        coef, _ = nnls(A / t[:, None], np.ones(len(t)))
        pred = A @ coef
        out[name] = coef
        print(name, "coefficients", coef)
        for r, tp in zip(rows, pred):
            print(f"  n={r['n']:5d} d={r['d']:4d}: measured {r[name]:6.2f} s, model {tp:6.2f} s")
    g, rz = out["gram"], out["randomized"]
    print("\n_solver.py constants:")
    print(f"GRAM_PASS_S_PER_GB = {g[0]:.3g}")
    print(f"GRAM_RATE = {1 / g[1]:.3g}" if g[1] > 0 else "GRAM_RATE = inf")
    print(f"EIGH_COEF = {g[2] / g[1]:.3g}" if g[1] > 0 else "EIGH_COEF = n/a")
    print(f"EMIT_RATE = {1 / g[3]:.3g}" if g[3] > 0 else "EMIT_RATE = inf (no emit term)")
    print(f"SKETCH_PASS_S_PER_GB = {rz[0]:.3g}")
    print(f"SKETCH_RATE = {1 / rz[1]:.3g}" if rz[1] > 0 else "SKETCH_RATE = inf")
    print(f"RANDOM_RATE = {1 / rz[2]:.3g}" if rz[2] > 0 else "RANDOM_RATE = inf (no generation term)")


if __name__ == "__main__":
    main()
