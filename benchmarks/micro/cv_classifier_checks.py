"""What skipping scikit-learn's per-call checks saves in ``cross_validate_dims``, and what the per-pass log costs.

``cross_validate_dims`` fits one LDA per fold and per d on the n x d embeddings
(thousands of small fits per store in ``wideml compare``). It runs them inside
``sklearn.config_context(assume_finite=True, skip_parameter_validation=True)``;
this benchmark times the same call with that context replaced by a no-op, in
the same run (median of 3), on in-memory data (the pass over X is the same in
both). It also times a small in-memory LOL fit with and without the per-pass
memory sampler (:func:`wideml.runtime.memory_watch.watch`).

Output: ``benchmarks/results/cv_classifier_checks.json``.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import machine, median_time, save  # noqa: E402

import wideml  # noqa: E402
from wideml.estimators.gram import cv as cv_module  # noqa: E402
from wideml.runner import fit_runner  # noqa: E402


def main() -> None:
    rng = np.random.default_rng(0)
    n, p, K = 300, 2000, 5
    y = np.arange(n) % K
    X = rng.standard_normal((n, p))
    X[:, :20] += y[:, None] * 0.5
    methods = {"lol": wideml.LOL(30), "pca": wideml.PCA(30), "rrlda": wideml.RRLDA(30)}

    def run_cv():
        wideml.cross_validate_dims(methods, X, y, cv=10, classifier="lda")

    with_context, runs_with = median_time(run_cv)
    real = cv_module.sklearn.config_context
    cv_module.sklearn.config_context = lambda **kw: contextlib.nullcontext()
    try:
        without_context, runs_without = median_time(run_cv)
    finally:
        cv_module.sklearn.config_context = real

    small = rng.standard_normal((100, 1000))
    labels = np.arange(100) % 2

    def many_fits():
        for _ in range(200):
            wideml.LOL(5).fit(small, labels)

    with_watch, runs_watch = median_time(many_fits)
    real_watch = fit_runner.watch
    fit_runner.watch = lambda: contextlib.nullcontext(type("U", (), {"seconds": 0.0, "peak_rss_bytes": 0})())
    try:
        without_watch, runs_nowatch = median_time(many_fits)
    finally:
        fit_runner.watch = real_watch

    result = {
        "machine": machine(),
        "cv": {"n": n, "p": p, "classes": K, "folds": 10, "methods": list(methods), "max_dim": 30, "lda_fits": 10 * 30 * 3,
               "seconds_with_checks_skipped": with_context, "runs_with": runs_with,
               "seconds_with_sklearn_checks": without_context, "runs_without": runs_without,
               "ratio_checked_over_skipped": without_context / with_context},
        "pass_log": {"fits": 200, "n": 100, "p": 1000, "seconds_with_sampler": with_watch, "runs_with": runs_watch,
                     "seconds_without_sampler": without_watch, "runs_without": runs_nowatch,
                     "ratio_with_over_without": with_watch / without_watch},
    }
    print(save("cv_classifier_checks", result))
    print(f"cv: {without_context:.2f} s with sklearn's checks, {with_context:.2f} s without "
          f"({without_context / with_context:.2f}x); 200 small LOL fits: {with_watch:.2f} s with the per-pass sampler, "
          f"{without_watch:.2f} s without ({with_watch / without_watch:.2f}x)")


if __name__ == "__main__":
    main()
