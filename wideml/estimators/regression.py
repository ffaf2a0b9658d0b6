"""LOL for regression (the LOL paper's Appendix F, Fig. 7C): LOL on percentile classes of y, then least squares.

The continuous target is cut into ``n_bins`` classes at the quantiles of the
training y, LOL is learned on those classes (the same streaming fit, the same
passes over X), and y is regressed, with an intercept, on the training
embedding (n x d: no further pass). Predicting is one transform pass.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d

from wideml.estimators.fitted import array, state
from wideml.estimators.gram.lol import LOL
from wideml.estimators.gram.projector import GramProjector
from wideml.estimators.params import Satisfies
from wideml.exceptions import WidemlError
from wideml.inputs.door import fit_input, labels_of
from wideml.runner import resume as _resume
from wideml.storage import FeatureStore


def quantile_bins(y: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile classes of a continuous target.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Finite real values.
    n_bins : int
        K, the number of percentile classes asked for.

    Returns
    -------
    codes : ndarray of int, shape (n_samples,)
        Bin of each sample, 0 .. K-1: bin k holds the values in
        [edges[k], edges[k+1]) (the last bin includes the maximum); a bin
        whose edges tie (edges[k] == edges[k+1] = v) holds exactly the values
        equal to v (the lowest such bin).
    edges : ndarray of shape (n_bins + 1,)
        ``numpy.quantile(y, linspace(0, 1, n_bins + 1))`` (linear interpolation).

    Notes
    -----
    Ties: a value equal to an inner edge goes to the bin above it, so equal
    values always share a bin. When ties make edges coincide at a value v
    (v holds at least a 1/K share of the samples), v gets a bin of its own,
    the first of the zero-width bins [v, v], and the values above v stay in
    the bin above the tied edges; the other bins between them stay empty
    (the fit then has fewer classes than ``n_bins``:
    :attr:`LOLRegressor.n_bins_`). So a y with two or more distinct values
    always gives two or more classes: 39 zeros and a one, cut into 10 bins,
    give bin 0 (the zeros) and bin 9 (the one).
    """
    edges = np.quantile(y, np.linspace(0.0, 1.0, n_bins + 1))
    codes = np.searchsorted(edges[1:-1], y, side="right")
    for k in np.flatnonzero(edges[:-1] == edges[1:])[::-1]:  # zero-width bins, the lowest of each tie assigned last
        codes[y == edges[k]] = k
    return codes.astype(np.int64), edges


def _at_least_two(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 2


class LOLRegressor(RegressorMixin, LOL):
    """LOL on percentile classes of a continuous target, then linear least squares on the embedding.

    Fit: y is cut into ``n_bins`` classes at its quantiles
    (:func:`quantile_bins`), :class:`LOL` is fitted on those classes (the
    reference class of the centroid differences is the most populous bin),
    and y is regressed with an intercept on the training embedding:
    ``predict(X) = transform(X) @ coef_ + intercept_``.

    Parameters
    ----------
    n_components : int, optional
        Embedding dimension d (default: the number of non-empty bins).
    n_bins : int, default 10
        K, the percentile classes (the paper's K = 10); at least 2.
    robust_first, orthogonalize, solver, precision, workdir, n_oversamples, n_power_iter, max_power_iter, tol, random_state
        As for :class:`LOL` (the second moment is the class-centred one).

    Attributes
    ----------
    coef_ : ndarray of shape (n_components,)
        Least-squares coefficients of y on the embedding.
    intercept_ : float
    bin_edges_ : ndarray of shape (n_bins + 1,)
        Quantile edges of the training y.
    n_bins_ : int
        Non-empty bins (classes) the LOL was fitted on (< n_bins with ties).
    components_, embedding_, offset_, classes_, n_features_in_, n_components_, ...
        As for :class:`LOL`; ``classes_`` are the bin indices.

    Notes
    -----
    ``fit`` makes the passes over X that :class:`LOL` makes (2 with the Gram
    solver); the bins and the least squares need none. ``predict`` and
    ``transform`` make 1.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 300))
    >>> y = X[:, :5].sum(axis=1) + 0.1 * rng.normal(size=60)     # a continuous target
    >>> reg = wideml.LOLRegressor(n_components=2, n_bins=5).fit(X, y)
    >>> reg.n_bins_                                              # LOL on 5 percentile classes of y
    5
    >>> reg.predict(X).shape                                     # then least squares on the embedding
    (60,)
    """

    second_moment = "linear"  # not a parameter: the regression uses LOL's class-centred second moment

    _parameter_constraints = {
        **{k: v for k, v in LOL._parameter_constraints.items() if k != "second_moment"},
        "n_bins": [Satisfies(_at_least_two, "an integer of at least 2")],
    }

    def __init__(self, n_components=None, *, n_bins=10, robust_first=True, orthogonalize=False, solver="auto", precision="auto",
                 workdir=None, n_oversamples=10, n_power_iter=1, max_power_iter=30, tol=1e-4, random_state=0):
        self.n_components = n_components
        self.n_bins = n_bins
        self.robust_first = robust_first
        self.orthogonalize = orthogonalize
        self.solver = solver
        self.precision = precision
        self.workdir = workdir
        self.n_oversamples = n_oversamples
        self.n_power_iter = n_power_iter
        self.max_power_iter = max_power_iter
        self.tol = tol
        self.random_state = random_state

    @_resume.auto_resumable
    def fit(self, X, y=None):
        """Bin y, fit LOL on the bins, then least squares of y on the training embedding.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Real, finite target (taken from the store when X is a FeatureStore and y is None).

        Returns
        -------
        self

        Notes
        -----
        Makes LOL's passes over X (two with the Gram solver); ``n_fit_passes_`` records them.
        """
        self._validate_parameters()
        if not isinstance(X, FeatureStore):
            fit_input(X, None, require_labels=False)  # X's own checks (metadata) come before the target's
        target = self._target(X, y)
        if np.all(target == target[0]):
            raise WidemlError(f"y takes the single value {float(target[0])!r}, so its percentile classes are one class; "
                              "give a target that varies.")
        codes, edges = quantile_bins(target, int(self.n_bins))  # two or more classes whenever y varies
        self._fit_data(fit_input(X, codes))
        design = np.hstack([np.ones((len(target), 1)), np.asarray(self.embedding_, dtype=np.float64)])
        solution = np.linalg.lstsq(design, target, rcond=None)[0]
        self.intercept_ = float(solution[0])
        self.coef_ = solution[1:]
        self.bin_edges_ = edges
        self.n_bins_ = int(len(self.classes_))
        return self

    @staticmethod
    def _target(X, y) -> np.ndarray:
        """y (or the store's) as a 1-D float64 array of finite values; one sentence otherwise."""
        y = labels_of(X, y)
        if y is None:
            raise WidemlError("requires y to be passed, but the target y is None; pass the target (or a store that holds y) to fit.")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1:
            raise WidemlError(f"y must be one target per sample (1-D), got shape {y.shape}; LOLRegressor fits a single target.")
        try:
            if y.dtype.kind not in "biufO":
                raise TypeError
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise WidemlError(f"Unknown label type for a regression target: y holds values of dtype {y.dtype} that are not numbers; "
                              "LOLRegressor needs a real target.") from None
        if not np.all(np.isfinite(y)):
            raise WidemlError("Input y contains NaN or infinity; drop those samples or fill their target.")
        return y

    def predict(self, X):
        """Predicted target, shape (n_samples,); one pass over X.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        return np.asarray(self.transform(X), dtype=np.float64) @ self.coef_ + self.intercept_

    def _method_name(self) -> str:
        return "LOLRegressor"

    _fitted = GramProjector._fitted + (
        state("n_bins_", load=int),
        state("intercept_", load=float),
        array("coef_"),
        array("bin_edges_"),
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.single_output = True
        return tags


__all__ = ["LOLRegressor", "quantile_bins"]
