"""Accuracy of the randomized solver against the exact Gram path (issue 4): principal angles, variance, test error.

For every dataset, embedding dimension d and number of power iterations q, LOL (the default: class
medians for the centroid differences) is fitted twice on the same training data, with
``solver="gram"`` (exact eigenvectors of the class-centred Gram) and ``solver="randomized"``
(``n_power_iter=q``, q + 2 passes over a store), and compared by:

- principal angles between the spans of the two loadings (sign-aware): the largest and the median;
- captured variance of the second-moment ("eigen") directions, sum_i ||M v_i||^2 over the unit
  directions v_i with M the class-centred training data, randomized over exact. The exact
  directions are the top eigenvectors, so the ratio is at most 1 and says how much of the
  variance they hold the randomized ones recover;
- LDA test error of each on held-out samples (what LOL is for);
- passes over X and fit time.

Datasets:
- Trunk (LOL paper Fig. 2B) and Toeplitz (AR(1) covariance: a flat spectrum, the hard case for
  a range finder), n = 1000 training + 1000 test samples, p = 100 000, float32 stores;
- Extended Yale B (real faces, 2414 x 1024, 38 classes; a random 80/20 split), in memory.

Usage: python benchmarks/scale/randomized_accuracy.py [--workdir DIR] [--p 100000] [--n 1000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.linalg

import sys  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/_common.py
from _common import save

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def captured_variance(est, codes: np.ndarray) -> float:
    """sum_i ||M v_i||^2 over the eigen columns v_i: the class-centred training embedding's squared norm."""
    kinds = np.asarray(est.component_kinds_)
    E = np.asarray(est.embedding_)[:, kinds == "eigen"].copy()
    for k in np.unique(codes):
        E[codes == k] -= E[codes == k].mean(axis=0)
    return float(np.square(E).sum())


def test_error(est, train_codes, X_test, y_test) -> float:
    from wideml.estimators.classifier import make_classifier

    clf = make_classifier("lda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(np.asarray(est.embedding_), train_codes)
        pred = clf.predict(np.asarray(est.transform(X_test)))
    return float(np.mean(pred != y_test))


def loadings(est) -> np.ndarray:
    C = est.components_
    return np.asarray(C.compute() if hasattr(C, "compute") else C, dtype=np.float64).T


def compare(name: str, X_train, y_train, X_test, y_test, dims, qs, repeats_seed: int = 0) -> list[dict]:
    import wideml

    codes = np.searchsorted(np.unique(y_train), y_train)
    rows = []
    for d in dims:
        t0 = time.perf_counter()
        exact = wideml.LOL(d, solver="gram").fit(X_train, y_train)
        t_exact = time.perf_counter() - t0
        A_exact = loadings(exact)
        var_exact = captured_variance(exact, codes)
        err_exact = test_error(exact, codes, X_test, np.searchsorted(np.unique(y_train), y_test))
        for q in qs:
            t0 = time.perf_counter()
            rand = wideml.LOL(d, solver="randomized", n_power_iter=q, random_state=repeats_seed).fit(X_train, y_train)
            t_rand = time.perf_counter() - t0
            angles = scipy.linalg.subspace_angles(loadings(rand), A_exact)
            row = {
                "dataset": name, "d": d, "q": q,
                "n_eigen": int(np.sum(np.asarray(exact.component_kinds_) == "eigen")),
                "max_angle_rad": float(angles.max()), "median_angle_rad": float(np.median(angles)),
                "captured_variance_ratio": captured_variance(rand, codes) / var_exact if var_exact > 0 else 1.0,
                "test_error_exact": err_exact,
                "test_error_randomized": test_error(rand, codes, X_test, np.searchsorted(np.unique(y_train), y_test)),
                "passes_exact": int(exact.n_fit_passes_), "passes_randomized": int(rand.n_fit_passes_),
                "fit_s_exact": t_exact, "fit_s_randomized": t_rand,
            }
            rows.append(row)
            print(f"{name:9s} d={d:3d} q={q}: max angle {row['max_angle_rad']:.3f} rad, median {row['median_angle_rad']:.3f}, "
                  f"variance {row['captured_variance_ratio']:.4f} of exact, test error {row['test_error_randomized']:.4f} "
                  f"(exact {err_exact:.4f}), {row['passes_randomized']} passes {t_rand:.2f} s (exact {t_exact:.2f} s)", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--p", type=int, default=100_000)
    ap.add_argument("--qs", default="0,1,2")
    args = ap.parse_args()

    import wideml
    from wideml.datasets import load_yale_b
    from wideml.sims import simulate_to_store

    qs = [int(q) for q in args.qs.split(",")]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="wideml-accuracy-"))
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    rows: list[dict] = []
    try:
        for setting in ("trunk", "toeplitz"):
            paths = {}
            for part, seed in (("train", 1), ("test", 2)):
                paths[part] = work / f"{setting}-{part}.zarr"
                simulate_to_store(setting, paths[part], args.n, args.p, seed=seed, overwrite=True)
            train, test = wideml.open_store(paths["train"]), wideml.open_store(paths["test"])
            rows += compare(setting, train, np.asarray(train.y), test, np.asarray(test.y), dims=(10, 50), qs=qs)
            for path in paths.values():
                shutil.rmtree(path, ignore_errors=True)
        X, y = load_yale_b(DATA / "faceYaleB_32x32.mat")
        rng = np.random.default_rng(0)
        order = rng.permutation(len(y))
        cut = int(0.8 * len(y))
        tr, te = order[:cut], order[cut:]
        Xf = X.astype(np.float64)
        rows += compare("yale-b", Xf[tr], y[tr], Xf[te], y[te], dims=(50, 100), qs=qs)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    out = save("randomized_accuracy", {"n_train": args.n, "p": args.p, "qs": qs, "rows": rows,
                                       "wall_s": time.perf_counter() - t_start})
    print(f"saved {out}")


if __name__ == "__main__":
    main()
