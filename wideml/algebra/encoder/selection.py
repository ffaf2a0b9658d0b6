"""Kernel selection by cross-entropy (the paper's Algorithm B, Steps 4 and 5; no access to X)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

#: Probabilities are clipped below at this value before taking logs.
PROBA_FLOOR = 1e-15


def cross_entropy(proba: np.ndarray, codes: np.ndarray) -> float:
    """c = -sum_i log T(i, y_i), with T clipped below at :data:`PROBA_FLOOR` (the paper's Step 4)."""
    picked = proba[np.arange(len(codes)), codes]
    return float(-np.log(np.clip(picked, PROBA_FLOOR, None)).sum())


def select_kernel(scores: Mapping[str, float], baseline: str | None = "linear", threshold: float = 0.30) -> str:
    """Pick a kernel by cross-entropy.

    With a ``baseline`` present in ``scores`` this is the rule of the paper's
    experiments: keep the baseline unless the best other kernel's score is at
    least ``threshold`` lower (c_best <= (1 - threshold) * c_baseline). With
    ``baseline=None`` (or absent) it is the plain arg-min (Algorithm B, Step 5).
    Ties go to the kernel listed first.
    """
    names = list(scores)
    best = min(names, key=lambda k: (scores[k], names.index(k)))
    if baseline is None or baseline not in scores:
        return best
    others = [k for k in names if k != baseline]
    if not others:
        return baseline
    cand = min(others, key=lambda k: (scores[k], names.index(k)))
    return cand if scores[cand] <= (1.0 - threshold) * scores[baseline] else baseline


__all__ = ["PROBA_FLOOR", "cross_entropy", "select_kernel"]
