"""What the class sizes allow, checked from the labels before any pass over X.

The labels are known when a fit starts (:func:`wideml.inputs.door.fit_input`),
so a method that cannot be fitted on classes this small is refused there, in one
sentence naming the class, its count and the fix, instead of failing in
scikit-learn or LAPACK after the passes (issue 22):

* **LDA** (the classifier after LOL, PCA, rrLDA, LFL, kernel LOL, and the
  encoder's own LDA) pools the within-class covariance: some class must hold
  at least 2 samples (scikit-learn needs n_samples > n_classes).
* **QDA** estimates a d x d covariance per class on the d-dimensional
  embedding; with ``n_k <= d`` samples a class's covariance has rank at most
  ``n_k - 1 < d`` and is singular, so every class needs at least d + 1 samples.
  A linear embedding of p features has rank at most p, so d <= p as well.
* **Metric learners** (NCA, LMNN, DNE) compare each sample with same-class
  neighbours: some class must hold at least 2 samples.

A covariance that is singular for reasons the labels cannot show (repeated
samples) is only found when the classifier is fitted; :func:`fit_classifier`
names that class too.
"""

from __future__ import annotations

import numpy as np

from wideml.exceptions import WidemlError

#: How errors tell users to switch to LDA (the API's parameter and the CLI's flag).
USE_LDA = "use classifier='lda' (--classifier lda)"


def class_counts(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Samples per class, shape (n_classes,)."""
    return np.bincount(np.asarray(codes, dtype=np.int64), minlength=n_classes)


def _label(classes: np.ndarray, i: int) -> str:
    value = classes[i]
    return repr(value.item() if hasattr(value, "item") else value)


def _samples(count: int) -> str:
    return f"{count} sample" + ("" if count == 1 else "s")


def require_class_spread(classes: np.ndarray, codes: np.ndarray, needs: str) -> None:
    """Refuse labels whose every class has one sample (nothing varies within a class).

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)
    codes : ndarray of int, shape (n_samples,)
    needs : str
        What needs the within-class spread, completing "... but {needs}",
        e.g. "the LDA classifier estimates a within-class covariance".

    Raises
    ------
    WidemlError
        When no class holds 2 samples or more.
    """
    counts = class_counts(codes, len(classes))
    if len(counts) and counts.max() < 2:
        raise WidemlError(
            f"every class of y has a single sample (class {_label(classes, 0)} has 1 sample, and so does each of the other "
            f"{len(counts) - 1}), but {needs}; give at least 2 samples of some class."
        )


def require_every_class(classes: np.ndarray, codes: np.ndarray, at_least: int, needs: str) -> None:
    """Refuse labels in which some class has fewer than ``at_least`` samples, naming the smallest class.

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)
    codes : ndarray of int, shape (n_samples,)
    at_least : int
    needs : str
        What needs them, completing "... but {needs}", e.g. "QOQ estimates a covariance per class".
    """
    counts = class_counts(codes, len(classes))
    i = int(np.argmin(counts))
    if counts[i] < at_least:
        raise WidemlError(f"class {_label(classes, i)} has {_samples(int(counts[i]))}, but {needs} and needs at least "
                          f"{at_least} samples in every class; give more samples of class {_label(classes, i)} or leave it out.")


def require_qda_sizes(classes: np.ndarray, codes: np.ndarray, d: int, rank_bound: int | None = None) -> None:
    """Refuse QDA on a d-dimensional embedding when a class cannot have a non-singular d x d covariance.

    Parameters
    ----------
    classes : ndarray of shape (n_classes,)
    codes : ndarray of int, shape (n_samples,)
    d : int
        The embedding dimension the classifier is fitted on.
    rank_bound : int, optional
        The number of features of a linear embedding, which bounds its rank.

    Raises
    ------
    WidemlError
        When the smallest class has d samples or fewer, or d exceeds ``rank_bound``.
    """
    counts = class_counts(codes, len(classes))
    i = int(np.argmin(counts))
    small = int(counts[i])
    if small < d + 1:
        lower = f"lower n_components to {small - 1}, " if small >= 2 else ""
        raise WidemlError(
            f"class {_label(classes, i)} has {_samples(small)}, but the QDA classifier estimates a {d} x {d} covariance per "
            f"class on the {d}-dimensional embedding and needs at least {d + 1} samples in every class; give more samples "
            f"of class {_label(classes, i)}, {lower}or {USE_LDA}."
        )
    if rank_bound is not None and d > rank_bound:
        raise WidemlError(
            f"the QDA classifier's covariance is singular in every class, since a {d}-dimensional embedding of "
            f"{rank_bound} feature{'' if rank_bound == 1 else 's'} has rank at most {rank_bound}; lower n_components to {rank_bound} or {USE_LDA}."
        )


def check_classifier_labels(name: str, classes: np.ndarray, codes: np.ndarray, d: int, rank_bound: int | None = None) -> None:
    """Before any pass: can classifier ``name`` ("lda" or "qda") be fitted on a d-dimensional embedding of these labels?

    See the module docstring for the rules. Raises WidemlError (one sentence) when it cannot.
    """
    if name == "qda":
        require_qda_sizes(classes, codes, d, rank_bound)
    else:
        require_class_spread(classes, codes, "the LDA classifier estimates a within-class covariance")


def _qda_rank(Zk: np.ndarray, reg_param: float, tol: float) -> int:
    """The rank scikit-learn's QDA finds for one class's samples (its SVD solver's rule)."""
    S = np.linalg.svd(Zk - Zk.mean(axis=0), compute_uv=False)
    S2 = (1 - reg_param) * S**2 / max(1, len(Zk) - 1) + reg_param
    return int(np.sum(S2 > tol))


def _lda_rank(Z: np.ndarray, labels: np.ndarray, tol: float) -> int:
    """The rank scikit-learn's LDA (SVD solver) finds for the within-class scatter of Z."""
    Xc = np.vstack([Z[labels == c] - Z[labels == c].mean(axis=0) for c in np.unique(labels)])
    std = Xc.std(axis=0)
    std[std == 0] = 1.0
    S = np.linalg.svd(Xc / std / np.sqrt(max(1, len(Z) - len(np.unique(labels)))), compute_uv=False)
    return int(np.sum(S > tol))


def fit_classifier(clf, Z: np.ndarray, labels: np.ndarray):
    """``clf.fit(Z, labels)``, with a classifier that has no covariance to work with refused in one sentence.

    The labels' sizes are checked before the fit (:func:`check_classifier_labels`);
    what is left is a covariance singular because of the data (repeated
    samples, an embedding of lower rank than its dimension): a QDA class
    covariance of rank below d (the class is named), or an LDA within-class
    scatter of rank 0. Any other failure is raised as it is.
    """
    try:
        return clf.fit(Z, labels)
    except (np.linalg.LinAlgError, IndexError) as exc:
        Z, labels = np.asarray(Z, dtype=np.float64), np.asarray(labels)
        reg, tol = getattr(clf, "reg_param", None), getattr(clf, "tol", None)
        if tol is None:
            raise
        if reg is None:  # LDA
            if _lda_rank(Z, labels, tol) == 0:
                raise WidemlError(
                    "the embedded samples do not vary within any class (e.g. repeated samples), so the LDA classifier has no "
                    "within-class covariance to estimate; give samples that differ within some class."
                ) from exc
            raise
        classes = np.unique(labels)
        for i, label in enumerate(classes):
            rows = Z[labels == label]
            rank = _qda_rank(rows, reg, tol)
            if rank < Z.shape[1]:
                lower = f"lower n_components to {rank} or " if rank else f"give samples of class {_label(classes, i)} that differ, or "
                raise WidemlError(
                    f"the QDA classifier's covariance of class {_label(classes, i)} is singular: its {_samples(len(rows))} "
                    f"span only {rank} of the {Z.shape[1]} embedding dimensions (e.g. repeated samples); {lower}{USE_LDA}."
                ) from exc
        raise


__all__ = ["USE_LDA", "check_classifier_labels", "class_counts", "fit_classifier", "require_class_spread", "require_qda_sizes"]
