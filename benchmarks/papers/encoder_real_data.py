"""Real-data reproduction of the encoder paper's Table 1 for Cora and Extended Yale B.

5-fold stratified CV x R replicates (default 5), the same folds for every method, in one run:

- linear encoder   EncoderClassifier(kernels="linear")
- multi-kernel     EncoderClassifier() — linear, euclidean, spearman; the paper's
                   training cross-entropy with the 30% rule (the default)
- SVM              sklearn SVC(kernel="rbf", C=1, gamma="scale") one-vs-one, on
                   features scaled to [0, 1] by the data set's global maximum
                   (pixels / 255; Cora is already binary)
- two-layer NN     MLPClassifier((100,), relu, lbfgs, alpha=0, max_iter=1000) on
                   the same scaled features (MATLAB fitcnet defaults)

All methods run with one BLAS thread (the machine is shared; threads only contend).
Error: the mean over replicates of each replicate's 5-fold error, ± the sd across
replicates (as in the paper's table). Time: fit + predict of one fold, in seconds,
mean ± sd over all folds. The paper's numbers are printed beside ours.

Also measured:
- kernel selection: the three selection scores, via ``cross_validate_encoder``, on both
  data sets and on Yale subsets of 6 and 10 subjects;
- the Spearman rank estimator: the error of the estimated-rank embedding against the
  exact one on Yale, for a few sample sizes m, and its effect on the test error.

Usage::

    python benchmarks/papers/encoder_real_data.py --data DIR [--replicates 5] [--skip-nn]

DIR holds ``Cora.mat`` and ``faceYaleB_32x32.mat``.

Writes ``benchmarks/results/encoder_real_data.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from wideml.datasets import load_cora, load_yale_b
from wideml.estimators.encoder.cv import cross_validate_encoder
from wideml.estimators.encoder.estimator import EncoderClassifier

HERE = Path(__file__).resolve().parents[1]  # benchmarks/
#: The paper's Table 1 (error %, ± sd; time, ± sd).
PAPER = {
    "cora": {"multi": (28.8, 0.6, 0.43, 0.05), "linear": (28.9, 0.2, 0.01, 0.00), "svm": (25.5, 0.4, 1.39, 0.06),
             "nn": (25.1, 0.4, 1.56, 0.06)},
    "yale": {"multi": (0.9, 0.1, 0.69, 0.02), "linear": (17.0, 0.3, 0.01, 0.00), "svm": (9.7, 0.6, 353, 7.9),
             "nn": (18.6, 0.4, 26.3, 2.1)},
}
LOADERS = {"cora": (load_cora, "Cora.mat"), "yale": (load_yale_b, "faceYaleB_32x32.mat")}
METHODS = ("linear", "multi", "svm", "nn")


def _timed(fit_predict):
    t = time.perf_counter()
    pred = fit_predict()
    return pred, time.perf_counter() - t


def run_method(name, Xtr, ytr, Xte, Xs_tr, Xs_te, seed):
    if name == "linear":
        est = EncoderClassifier(kernels="linear")
        pred, sec = _timed(lambda: est.fit(Xtr, ytr).predict(Xte))
        return pred, sec, "linear"
    if name == "multi":
        est = EncoderClassifier()
        pred, sec = _timed(lambda: est.fit(Xtr, ytr).predict(Xte))
        return pred, sec, est.kernel_
    if name == "svm":
        est = SVC(kernel="rbf", C=1.0, gamma="scale", decision_function_shape="ovo")
        pred, sec = _timed(lambda: est.fit(Xs_tr, ytr).predict(Xs_te))
        return pred, sec, None
    est = MLPClassifier((100,), activation="relu", solver="lbfgs", alpha=0.0, max_iter=1000, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred, sec = _timed(lambda: est.fit(Xs_tr, ytr).predict(Xs_te))
    return pred, sec, None


def reproduce(name, X, y, replicates, methods):
    Xs = X / X.max()
    errors = {m: np.zeros((replicates, 5)) for m in methods}
    times = {m: [] for m in methods}
    chosen = []
    for r in range(replicates):
        folds = StratifiedKFold(5, shuffle=True, random_state=r).split(X, y)
        for f, (tr, te) in enumerate(folds):
            for m in methods:
                pred, sec, kern = run_method(m, X[tr], y[tr], X[te], Xs[tr], Xs[te], r)
                errors[m][r, f] = np.mean(pred != y[te])
                times[m].append(sec)
                if m == "multi":
                    chosen.append(kern)
            line = "  ".join(f"{m} {100 * errors[m][r, f]:5.1f}% {times[m][-1]:7.3f}s" for m in methods)
            print(f"[{name}] replicate {r} fold {f}: {line}", flush=True)
    out = {}
    for m in methods:
        per_rep = errors[m].mean(axis=1)
        out[m] = {
            "error_mean": float(per_rep.mean()), "error_sd": float(per_rep.std(ddof=1)) if replicates > 1 else 0.0,
            "fold_errors": errors[m].tolist(), "time_mean": float(np.mean(times[m])), "time_sd": float(np.std(times[m], ddof=1)),
            "paper_error": PAPER[name][m][0], "paper_error_sd": PAPER[name][m][1], "paper_time": PAPER[name][m][2],
            "paper_time_sd": PAPER[name][m][3],
        }
    if "multi" in out:
        out["multi"]["selected_kernels"] = {k: chosen.count(k) for k in sorted(set(chosen))}
    return out


def selection_study(datasets, replicates):
    """Each selection score's choices and CV error (cross_validate_encoder: one pass per run)."""
    rows = {}
    for name, (X, y) in datasets.items():
        rows[name] = {}
        for sel in ("cross_entropy", "loo_cross_entropy", "cv_cross_entropy"):
            errs, picks, kerr = [], [], {}
            for r in range(replicates):
                res = cross_validate_encoder(X, y, cv=5, selection=sel, random_state=r)
                errs.append(res["mean_error"])
                picks += res["selected_kernels"]
                for k, v in res["kernel_errors"].items():
                    kerr.setdefault(k, []).append(float(np.mean(v)))
            rows[name][sel] = {"error_mean": float(np.mean(errs)), "selected_kernels": {k: picks.count(k) for k in sorted(set(picks))},
                               "kernel_error_mean": {k: float(np.mean(v)) for k, v in kerr.items()}}
            print(f"[selection] {name:8s} {sel:18s} error {100 * np.mean(errs):5.1f}%  picks {rows[name][sel]['selected_kernels']}  "
                  f"single-kernel errors { {k: round(100 * np.mean(v), 1) for k, v in kerr.items()} }", flush=True)
    return rows


def spearman_sketch_study(X, y, sizes=(32, 128, 512)):
    """Estimated-rank Spearman embedding against the exact one on Yale (p = 1024), one 5-fold run."""
    out = {}
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    exact_err = []
    exact_Z = []
    for tr, te in folds:
        est = EncoderClassifier(kernels="spearman", spearman="exact").fit(X[tr], y[tr])
        exact_Z.append(est.transform(X[te]))
        exact_err.append(np.mean(est.predict(X[te]) != y[te]))
    out["exact"] = {"error": float(np.mean(exact_err))}
    for m in sizes:
        errs, dz_max, dz_mean = [], [], []
        for (tr, te), Ze in zip(folds, exact_Z):
            est = EncoderClassifier(kernels="spearman", spearman="approx", sketch_size=m).fit(X[tr], y[tr])
            Z = est.transform(X[te])
            dz_max.append(float(np.abs(Z - Ze).max()))
            dz_mean.append(float(np.abs(Z - Ze).mean()))
            errs.append(np.mean(est.classes_[est.classifier_.predict(Z)] != y[te]))
        out[f"m={m}"] = {"error": float(np.mean(errs)), "abs_dZ_max": float(np.max(dz_max)), "abs_dZ_mean": float(np.mean(dz_mean))}
        print(f"[spearman approx] m={m:5d} of p={X.shape[1]}: |dZ| max {np.max(dz_max):.4f} mean {np.mean(dz_mean):.4f}; "
              f"error {100 * np.mean(errs):.2f}% (exact {100 * np.mean(exact_err):.2f}%)", flush=True)
    return out


def print_table(results):
    print()
    print(f"{'data':6s} {'method':8s} {'error (ours)':>16s} {'paper':>14s} {'time s (ours)':>17s} {'paper':>14s}")
    for name, res in results.items():
        for m in METHODS:
            if m not in res:
                continue
            r = res[m]
            print(f"{name:6s} {m:8s} {100 * r['error_mean']:8.1f}% ± {100 * r['error_sd']:4.1f} "
                  f"{r['paper_error']:7.1f}% ± {r['paper_error_sd']:3.1f} {r['time_mean']:9.4f} ± {r['time_sd']:6.4f} "
                  f"{r['paper_time']:7.2f} ± {r['paper_time_sd']:4.2f}")
    if "yale" in results and "svm" in results["yale"]:
        y = results["yale"]
        for m in ("linear", "multi"):
            print(f"Yale: SVC time / {m} encoder time (fit + predict, same folds) = {y['svm']['time_mean'] / y[m]['time_mean']:.0f}x")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--data", required=True, help="folder holding Cora.mat and faceYaleB_32x32.mat")
    parser.add_argument("--skip-nn", action="store_true", help="leave out the (slow) MLP")
    parser.add_argument("--output", default=str(HERE / "results" / "encoder_real_data.json"))
    args = parser.parse_args(argv)
    datasets = {name: loader(Path(args.data) / fname) for name, (loader, fname) in LOADERS.items()}
    methods = [m for m in METHODS if not (args.skip_nn and m == "nn")]
    t0 = time.perf_counter()
    blas = threadpool_limits(1, user_api="blas")  # every method single-threaded: the machine is shared
    results = {name: reproduce(name, X, y, args.replicates, methods) for name, (X, y) in datasets.items()}
    Xy, yy = datasets["yale"]
    subsets = dict(datasets)
    for k in (6, 10):
        subsets[f"yale{k}"] = (Xy[yy <= k], yy[yy <= k])
    selection = selection_study(subsets, args.replicates)
    sketch = spearman_sketch_study(Xy, yy)
    blas.unregister()
    print_table(results)
    report = {
        "protocol": "stratified 5-fold CV x replicates (seeds 0..R-1), same folds for all methods; time = fit + predict per fold",
        "replicates": args.replicates, "results": results, "selection": selection, "spearman_estimated_ranks_yale": sketch,
        "svm_over_linear_time_yale": results["yale"]["svm"]["time_mean"] / results["yale"]["linear"]["time_mean"],
        "svm_over_multi_time_yale": results["yale"]["svm"]["time_mean"] / results["yale"]["multi"]["time_mean"],
        "wall_seconds": time.perf_counter() - t0,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2))
    print(f"written {args.output}")


if __name__ == "__main__":
    main()
