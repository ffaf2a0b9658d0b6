"""LFL: LOL's centroid differences plus very sparse random projections, fitted in one pass.

The random columns are nested in d: column j of R depends only on (random_state,
feature index, j) (:func:`wideml.passes.keyed_random.sparse_sign_columns`), so
the LFL with d components is the first d columns of any LFL with more, and
:func:`wideml.cross_validate_dims` scores every d from one pass. Models saved
before the columns were nested carry no ``random_columns`` state and keep
their own projection ("tiles", :func:`~wideml.passes.keyed_random.sparse_sign_rows`).
"""

from __future__ import annotations


import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from wideml.algebra.randomized import centroid_differences
from wideml.runner import resume as _resume
from wideml.runner.fit_runner import FitPasses, run_new_data
from wideml.estimators.fitted import FittedState, array, p_array, state
from wideml.inputs.door import fit_input, predict_input
from wideml.estimators.params import BOOLEAN, NONE, POSITIVE_INT, PRECISION, SEED, CheckedParams, Interval, Options, PathLike
from wideml.runner.workdir import work_array
from wideml.passes.chunkmath import check_precision, resolve_precision
from wideml.passes.gram import CLASS_MEANS, CLASS_MEDIANS, FEATURE_MEAN
from wideml.passes.keyed_random import SPARSE_SCHEMES, lfl_density
from wideml.passes.lfl import LflPass, lfl_components, lfl_project_pass
from wideml.passes.spec import Pass
from wideml.storage.labels import classes_from_model
from wideml.exceptions import WidemlError


def _sparse_scheme(value) -> str:
    """A model's ``random_columns`` state, checked: a scheme this version generates."""
    if value not in SPARSE_SCHEMES:
        raise WidemlError(f"this LFL model's random projection is of kind {value!r}, which this version of wideml cannot "
                          f"regenerate (it knows {', '.join(SPARSE_SCHEMES)}); load it with the wideml that saved it, or refit.")
    return str(value)


class LFL(FittedState, CheckedParams, TransformerMixin, BaseEstimator):
    """Low-rank Fast Linear embedding (the LOL paper's FlashLFL), out of core.

    A = [unit centroid differences mu_(1) - mu_(i) (K-1 columns, reference =
    most populous class), R], where R (p x (d-K+1)) is a very sparse random
    projection (Li, Hastie & Church 2006): entries +-1/sqrt(density) with
    probability density/2 each, generated from (random_state, feature index,
    column), so it is never stored, does not depend on the chunking, and is
    nested in d (the first d columns of a larger LFL's R are this one's).
    With d < K - 1 only the first d centroid differences are kept.

    Parameters
    ----------
    n_components : int, optional
        d (default: the number of classes).
    robust_first : bool, default False
        Class medians instead of means. Off by default: LFL is the speed
        variant, and medians cost a sort of every chunk.
    density : float or "auto", default "auto"
        Non-zero fraction of R; "auto" = 1/sqrt(p) as Li et al. recommend.
    random_state : int, default 0
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's products in the fit and transform passes.
        "auto" multiplies float32 (and narrower) data in float32 and anything
        else in float64. Products run on each chunk centred by its feature
        means, and means, centroids and sums across chunks are always float64,
        so float32 products change the results only at float32 round-off of
        the centred data (relative error about 1e-6); "float64" reproduces
        float64 arithmetic exactly at twice the memory traffic.
    workdir : str, optional
        Where the p-sized centroids of out-of-core input go until saved.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
        Training embedding, from the fit pass (equals ``transform(X_train)``).
    components_ : dask array of shape (n_components, n_features)
        Lazy: generated chunk by chunk when read, never stored.
    centroids_ : ndarray or dask array of shape (n_classes, n_features)
    density_ : float
    random_columns_ : str
        How R is generated: "columns" (nested in d); "tiles" for models saved
        before LFL's columns were nested (loaded with their own projection).
    precision_ : str
        The working precision the fit used ("float32" or "float64").
    classes_, n_features_in_, n_components_, offset_

    Notes
    -----
    ``fit`` makes **one pass** over X (training embedding included);
    ``transform`` makes one.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> lfl = wideml.LFL(n_components=3, random_state=0).fit(X, y)
    >>> lfl.transform(X).shape
    (40, 3)
    >>> lfl.n_fit_passes_                              # centroid differences and the sparse projection in one pass
    1
    """

    n_fit_passes = 1

    _parameter_constraints = {
        "n_components": [POSITIVE_INT, NONE],
        "robust_first": [BOOLEAN],
        "density": [Interval(0, 1, closed="right"), Options("auto")],
        "random_state": [SEED],
        "precision": [PRECISION],
        "workdir": [PathLike(), NONE],
    }

    def __init__(self, n_components=None, *, robust_first=False, density="auto", random_state=0, precision="auto", workdir=None):
        self.n_components = n_components
        self.robust_first = robust_first
        self.density = density
        self.random_state = random_state
        self.precision = precision
        self.workdir = workdir

    def _density(self, p: int) -> float:
        return lfl_density(p) if self.density == "auto" else float(self.density)

    @_resume.auto_resumable
    def fit(self, X, y=None):
        """Fit in **one pass** over X (centroids, their Gram, and the training embedding).

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels (taken from the store when X is a FeatureStore and y is None).

        Returns
        -------
        self
        """
        self._validate_parameters()
        data = fit_input(X, y)
        density = self._density(data.n_features)
        precision = resolve_precision(self.precision, data.X.dtype)
        K, p = data.n_classes, data.n_features
        d = self.n_components if self.n_components is not None else K
        n_deltas = min(d, K - 1)
        k = d - n_deltas
        group = None
        passes = FitPasses.for_fit(self, self.n_fit_passes, data)  # resumable when the fit is
        if not data.in_memory:
            w = data.X.chunks[1][0]
            arrays = {FEATURE_MEAN: ((p,), (w,)), CLASS_MEANS: ((K, p), (K, w)), CLASS_MEDIANS: ((K, p), (K, w))}
            group = passes.model_group(arrays)
        st = passes.run(LflPass(data.X, data.codes, K, n_random=k, seed=int(self.random_state), density=density,
                                robust=bool(self.robust_first), out_group=group, precision=precision, scheme="columns"),
                        "class statistics and sparse projection")
        group = passes.settle(group)  # a resumable fit's group, out of the work directory (removed once the fit succeeds)
        Dm = centroid_differences(data.codes, K, st["CC"])[:, :n_deltas]
        XA = np.hstack([st["XC"] @ Dm, st["XR"]])
        self.offset_ = np.concatenate([st["mC"] @ Dm, st["mR"]])
        self.embedding_ = XA - self.offset_
        if group is not None:
            self.centroids_ = work_array(group, CLASS_MEDIANS if self.robust_first else CLASS_MEANS)
        else:
            self.centroids_ = st["centroids"]
        self._Dm = Dm
        self.classes_ = data.classes
        self.train_codes_ = data.codes
        self.n_features_in_ = p
        self.n_components_ = d
        self.density_ = density
        self.random_columns_ = "columns"
        self.precision_ = precision
        self.solver_ = "lfl"
        passes.record()
        self.provenance_ = dict(data.source)
        self.feature_layout_ = data.layout
        self._chunk = int(data.X.chunks[1][0])
        return self

    @property
    def components_(self):
        check_is_fitted(self, "_Dm")
        return lfl_components(self.centroids_, self._Dm, n_features=self.n_features_in_, n_random=self.n_components_ - self._Dm.shape[1],
                              seed=int(self.random_state), density=self.density_, chunk=self._chunk,
                              scheme=self.random_columns_).T

    def transform(self, X):
        """Embed X in **one pass** over X.

        Parameters
        ----------
        X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The centred coordinates of ``embedding_``. Products run in the
            ``precision`` this estimator was given, resolved for X's dtype.
        """
        check_is_fitted(self, "_Dm")
        check_precision(self.precision)
        Xd = predict_input(X, self.n_features_in_, "LFL", layout=getattr(self, "feature_layout_", None))
        return run_new_data(Pass(lambda: lfl_project_pass(Xd, self.centroids_, self._Dm, n_random=self.n_components_ - self._Dm.shape[1],
                                                          seed=int(self.random_state), density=self.density_, precision=self.precision,
                                                          scheme=self.random_columns_)),
                            "LFL transform: one pass", offset=self.offset_)

    def fit_transform(self, X, y=None, **fit_params):
        """Fit (one pass) and return the training embedding."""
        return self.fit(X, y).embedding_

    # -- model store: the fitted attributes a model keeps -------------------------------
    _fitted = (
        state("n_features_in_", load=int),
        state("n_components_", load=int),
        state("density_", "density", save=float),
        state("_chunk", "chunk", load=int),
        state("solver_"),
        state("random_columns_", load=_sparse_scheme, default="tiles"),  # models saved before the nested columns: their own R
        state("precision_", default="float64"),  # models saved before the precision option ran in float64
        state("n_fit_passes_", default=lambda cls: cls.n_fit_passes),  # every LFL fit makes its one pass
        array("classes_", load=classes_from_model),  # text classes: zarr reads StringDType, back to <U
        array("train_codes_"),
        array("offset_"),
        array("embedding_"),
        array("_Dm", "Dm"),
        p_array("centroids_"),
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
