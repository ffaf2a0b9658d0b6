"""RP: a dense Gaussian random projection X -> X A (the LOL paper's RP baseline), out of core, in one pass."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from wideml.estimators.fitted import FittedState, array, state
from wideml.estimators.params import NONE, POSITIVE_INT, PRECISION, SEED, CheckedParams
from wideml.exceptions import WidemlError
from wideml.inputs.door import fit_input, predict_input
from wideml.passes.chunkmath import check_precision, resolve_precision
from wideml.passes.keyed_random import gaussian_columns
from wideml.passes.rp import RpPass, rp_pass
from wideml.passes.spec import Pass
from wideml.runner import resume as _resume
from wideml.runner.fit_runner import FitPasses, run_new_data
from wideml.storage.labels import classes_from_model


def rp_dimension_problem(d: int, n_features: int) -> str | None:
    """Why a random projection to ``d`` dimensions of ``n_features`` features is refused (d > p), or None.

    A projection to more dimensions than features is possible (A is p x d)
    but adds only linear combinations of the same p coordinates: the
    embedding has rank at most p (at most n - 1 on n training samples, which
    the classifier after it copes with, as for new data it need not), so
    d > p is refused, as LOL refuses it.
    """
    if d > n_features:
        return (f"n_components={d} is more than the {n_features} features; a random projection to more dimensions than "
                f"features only adds linear combinations of the same {n_features} coordinates; use n_components <= {n_features}.")
    return None


class RP(FittedState, CheckedParams, TransformerMixin, BaseEstimator):
    """Gaussian random projection, out of core: X -> (X - 1 m^T) A, A of shape (p, d).

    A's entries are independent **N(0, 1)** (not scaled by 1/sqrt(d): a
    scale would make a column depend on d, and LDA after the projection does
    not depend on it). Entry (j, c) is generated from (random_state, feature
    index j, column c) (:func:`wideml.passes.keyed_random.gaussian_columns`),
    so A is never stored, results do not depend on how X is chunked, and A is
    nested in d: the first 10 columns of ``RP(40)``'s A are ``RP(10)``'s.
    Label-free; labels, when given, are kept (``classes_``, ``train_codes_``)
    for a classifier on the embedding.

    Parameters
    ----------
    n_components : int, optional
        d (default: the number of classes, 1 without labels); at most the
        number of features p (:func:`rp_dimension_problem`). d above
        n_samples - 1 is accepted: the training embedding then has rank at
        most n - 1, but new data's embeddings do not.
    random_state : int, default 0
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's products ("auto": float32 for float32 data,
        float64 otherwise); each chunk is centred by its own means first and
        sums across chunks are float64.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
        Training embedding (equals ``transform(X_train)``).
    offset_ : ndarray of shape (n_components,)
        m^T A, m the training feature means.
    components_ : ndarray of shape (n_components, n_features)
        A^T, generated on access (p x d values: only for small p).
    classes_, train_codes_, n_features_in_, n_components_, precision_

    Notes
    -----
    ``fit`` makes **one pass** over X; ``transform`` makes one.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> rp = wideml.RP(n_components=3, random_state=0).fit(X)
    >>> rp.transform(X).shape
    (40, 3)
    >>> np.allclose(wideml.RP(2, random_state=0).fit(X).transform(X), rp.transform(X)[:, :2])   # nested in d
    True
    """

    n_fit_passes = 1

    _parameter_constraints = {
        "n_components": [POSITIVE_INT, NONE],
        "random_state": [SEED],
        "precision": [PRECISION],
    }

    def __init__(self, n_components=None, *, random_state=0, precision="auto"):
        self.n_components = n_components
        self.random_state = random_state
        self.precision = precision

    @_resume.auto_resumable
    def fit(self, X, y=None):
        """Project the training data in **one pass** over X.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), optional
            Labels (kept for a classifier; taken from a store when None).

        Returns
        -------
        self
        """
        self._validate_parameters()
        data = fit_input(X, y, require_labels=False)
        precision = resolve_precision(self.precision, data.dtype)
        d = self.n_components if self.n_components is not None else data.n_classes
        why = rp_dimension_problem(int(d), data.n_features)
        if why:
            raise WidemlError(why)
        passes = FitPasses.for_fit(self, self.n_fit_passes, data)
        XA = passes.run(RpPass(data.X, n_components=d, seed=int(self.random_state), precision=precision,
                               numpy_X=data.numpy_X if data.in_memory else None),
                        "Gaussian random projection")
        self.offset_ = XA.mean(axis=0)  # m^T A = (1/n) 1^T X A
        self.embedding_ = XA - self.offset_
        self.classes_ = data.classes
        self.train_codes_ = data.codes
        self.n_features_in_ = data.n_features
        self.n_components_ = int(d)
        self.precision_ = precision
        passes.record()
        self.provenance_ = dict(data.source)
        self.feature_layout_ = data.layout
        return self

    @property
    def components_(self) -> np.ndarray:
        check_is_fitted(self, "offset_")
        return gaussian_columns(int(self.random_state), 0, self.n_features_in_, self.n_components_).T

    def transform(self, X):
        """Embed X in **one pass** over X.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            (X - 1 m^T) A, in the coordinates of ``embedding_``.
        """
        check_is_fitted(self, "offset_")
        check_precision(self.precision)
        Xd = predict_input(X, self.n_features_in_, "RP", layout=getattr(self, "feature_layout_", None))
        options = {"n_components": self.n_components_, "seed": int(self.random_state), "precision": self.precision}
        return run_new_data(Pass(lambda: rp_pass(Xd, **options)), "RP transform: one pass", offset=self.offset_)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit (one pass) and return the training embedding."""
        return self.fit(X, y).embedding_

    # -- model store: the fitted attributes a model keeps -------------------------------
    _fitted = (
        state("n_features_in_", load=int),
        state("n_components_", load=int),
        state("precision_"),
        state("n_fit_passes_", default=lambda cls: cls.n_fit_passes),
        array("classes_", load=classes_from_model),
        array("train_codes_"),
        array("offset_"),
        array("embedding_"),
    )
