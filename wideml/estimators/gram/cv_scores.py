"""Scores of a cross-validation over dimensions: rounds of folds, out-of-fold predictions, Cohen's kappa, names.

A *round* is a set of folds whose test sets partition (part of) the samples:
the single round of a k-fold CV, or each repetition of a repeated k-fold CV
(``RepeatedStratifiedKFold(10, n_repeats=3)`` is "10-fold CV repeated 3 times",
3 rounds of 10 folds, never "30-fold"). Out-of-fold predictions are kept per
round, method and dimension (class codes; -1 for a sample no test fold of the
round holds), and Cohen's kappa is computed per round on the samples the round
tested, then averaged over rounds. A splitter whose test sets overlap and that
declares no repetitions (``ShuffleSplit``) has one round per split.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import cohen_kappa_score


def fold_rounds(splitter, folds: list) -> list[list[int]]:
    """Fold indices grouped into rounds (see the module docstring).

    Parameters
    ----------
    splitter : scikit-learn splitter or iterable
        What produced ``folds``; its ``n_repeats`` (repeated k-fold) groups
        consecutive folds.
    folds : list of (train, test)

    Returns
    -------
    list of list of int
    """
    n_repeats = getattr(splitter, "n_repeats", None)
    if isinstance(n_repeats, int) and n_repeats > 1 and len(folds) % n_repeats == 0:
        per = len(folds) // n_repeats
        return [list(range(r * per, (r + 1) * per)) for r in range(n_repeats)]
    tested = np.concatenate([np.asarray(te) for _, te in folds]) if folds else np.zeros(0, dtype=int)
    if len(np.unique(tested)) == len(tested):
        return [list(range(len(folds)))]
    return [[f] for f in range(len(folds))]


def describe_cv(splitter, folds: list, rounds: list[list[int]]) -> str:
    """The cross-validation's name for titles and reports: "10-fold CV", "10-fold CV repeated 3 times", "30 train/test splits"."""
    per = len(rounds[0]) if rounds else 0
    partition = all(len(r) == per for r in rounds) and per > 1
    if partition and len(rounds) > 1:
        return f"{per}-fold CV repeated {len(rounds)} times"
    if partition:
        return f"{per}-fold CV"
    return f"{len(folds)} train/test split{'s' if len(folds) != 1 else ''}"


def out_of_fold(n_samples: int, folds: list, rounds: list[list[int]], fold_predictions: list[np.ndarray]) -> np.ndarray:
    """Out-of-fold predicted codes per round and dimension.

    Parameters
    ----------
    n_samples : int
    folds : list of (train, test)
    rounds : list of list of int
    fold_predictions : list of ndarray of shape (n_test_f, n_dims)
        Predicted class codes of each fold's test samples (NaN-free ints).

    Returns
    -------
    ndarray of int64, shape (n_rounds, n_dims, n_samples)
        -1 where the round tested no such sample.
    """
    n_dims = fold_predictions[0].shape[1] if fold_predictions else 0
    out = np.full((len(rounds), n_dims, n_samples), -1, dtype=np.int64)
    for r, members in enumerate(rounds):
        for f in members:
            out[r][:, np.asarray(folds[f][1])] = fold_predictions[f].T
    return out


def kappas(codes: np.ndarray, oof: np.ndarray, n_classes: int) -> np.ndarray:
    """Cohen's kappa per round and dimension, on the samples each round tested.

    Parameters
    ----------
    codes : ndarray of int, shape (n_samples,)
        True class codes.
    oof : ndarray of shape (n_rounds, n_dims, n_samples)
        From :func:`out_of_fold`.
    n_classes : int

    Returns
    -------
    ndarray of shape (n_rounds, n_dims)
        ``sklearn.metrics.cohen_kappa_score(codes[t], oof[r, j, t])`` over the
        tested samples t (labels 0..K-1 given, so a class never predicted
        still counts); NaN when kappa is undefined (one class only).
    """
    labels = np.arange(n_classes)
    out = np.full(oof.shape[:2], np.nan)
    for r in range(oof.shape[0]):
        for j in range(oof.shape[1]):
            tested = oof[r, j] >= 0
            if tested.any():
                with np.errstate(divide="ignore", invalid="ignore"):
                    out[r, j] = cohen_kappa_score(codes[tested], oof[r, j, tested], labels=labels)
    return out
