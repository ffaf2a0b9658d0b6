"""LOL, QOQ (``LOL(second_moment="quadratic")``), PCA and rrLDA estimators."""

from __future__ import annotations

from wideml.algebra.lol import lol_projection, pca_projection, rrlda_projection
from wideml.algebra.randomized import randomized_projection
from wideml.estimators.class_sizes import require_every_class
from wideml.estimators.params import BOOLEAN, Options
from wideml.estimators.gram.projector import GramProjector
from wideml.exceptions import WidemlError


class LOL(GramProjector):
    """Linear Optimal Low-rank projection (Vogelstein et al.), exact, out of core.

    A = [unit centroid differences mu_(1) - mu_(i) (K-1 columns; reference =
    most populous class), top d-(K-1) directions of the class-centred
    covariance]. With ``second_moment="quadratic"`` this is QOQ: the
    directions come from per-class covariances pooled by singular value
    (classify with QDA).

    Parameters
    ----------
    n_components : int, optional
        Embedding dimension d (default: the number of classes).
    robust_first : bool, default True
        Class medians instead of means for the centroid differences (the
        paper's default LOL). Medians are computed chunk by chunk in the
        Gram pass.
    second_moment : {"linear", "quadratic"}, default "linear"
    orthogonalize : bool, default False
        Orthonormalise the columns (Gram-Schmidt order; keeps nesting in d).
    solver : {"auto", "gram", "randomized"}, default "auto"
        "gram": one streaming pass builds the n x n Gram, then exact
        eigensolves (2 passes with the emit pass). "randomized": a range
        finder on the class-centred operator, iterated (one pass over X per
        power iteration) until its subspace has converged to ``tol``
        (q power iterations: q + 2 passes, + 1 emit pass in memory); its test
        matrix is keyed on (random_state, feature index), so the result does
        not depend on the chunking. "auto" uses the exact Gram solver whenever
        the n x n Gram fits the memory budget and is not clearly (2x) costlier
        by the cost model of :func:`wideml.estimators.gram.solver.choose_solver`,
        and records the choice and the rule that made it in ``solver_`` and
        ``solver_reason_``.
    precision : {"auto", "float64", "float32"}, default "auto"
        Dtype of each chunk's products (Gram, class cross-products, emit).
        Feature means, centring and every sum across chunks are float64.
        "auto" multiplies float32 data in float32 (about twice as fast as
        float64; each chunk is centred first, so large feature offsets cost
        nothing) and everything else in float64. On the oracle test data
        float32 products move the subspace by the order of 1e-6 rad;
        "float64" is exact to round-off.
    workdir : str, optional
        Where p-sized fitted arrays of out-of-core input go until saved
        (default: the system temporary directory).
    n_oversamples : int, default 10
        Extra sketch columns of the randomized solver.
    n_power_iter : int, default 1
        Fewest power iterations of the randomized solver.
    max_power_iter : int, default 30
        Most power iterations of the randomized solver; if its subspace has
        not converged by then it stops with a ConvergenceWarning (the fit is
        valid, its subspace less accurate than ``tol``).
    tol : float, default 1e-4
        Convergence tolerance of the randomized solver, in radians: it stops
        once the largest principal angle between successive iterates' top
        subspaces, and the distance still to go estimated from how fast they
        shrink, are both at most ``tol``.
    random_state : int or None, default 0
        Seed of the randomized solver's test matrix.

    Attributes
    ----------
    components_ : ndarray or dask array of shape (n_components, n_features)
        Loadings A^T; store-backed (lazy) for out-of-core input.
    embedding_ : ndarray of shape (n_samples, n_components)
        Training embedding, from the Gram (equals ``transform(X_train)``).
    offset_ : ndarray of shape (n_components,)
        m^T A (m the training feature means), subtracted by ``transform``.
    eigenvalues_ : ndarray
        Squared singular values of the second-moment columns.
    component_kinds_ : list of str
        "delta" or "eigen" per column.
    n_power_iter_ : int or None
        Power iterations the randomized solver took (None for the Gram solver).
    subspace_angle_ : float or None
        Randomized solver: the largest principal angle (radians) between its
        last two iterates' subspaces (None for the Gram solver).
    classes_, n_features_in_, n_components_, solver_, solver_reason_, precision_

    Notes
    -----
    ``fit`` makes 2 passes over X with the Gram solver and, with the
    randomized one, q + 2 over a store (the loadings are assembled from a
    p x l matrix the last pass writes into the model group) or q + 3 over
    in-memory data, q = ``n_power_iter_`` (``n_fit_passes_``); ``transform``
    makes 1.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> lol = wideml.LOL(n_components=3).fit(X, y)
    >>> lol.transform(X).shape
    (40, 3)
    >>> lol.components_.shape                    # one row per direction, one column per feature
    (3, 500)
    >>> lol.solver_, lol.n_fit_passes_           # the exact Gram solver: the Gram pass, then the emit pass
    ('gram', 2)

    From a feature store on disk, with the labels the store holds (nothing p-sized is held in memory):

    >>> path = wideml.write_store("lol_example.zarr", X.astype(np.float32), y, feature_chunk=100)
    >>> lol = wideml.LOL(n_components=3).fit(wideml.open_store(path))
    >>> lol.transform(wideml.open_store(path)).shape
    (40, 3)
    """

    _parameter_constraints = {
        **GramProjector._parameter_constraints,
        "robust_first": [BOOLEAN],
        "second_moment": [Options("linear", "quadratic")],
        "orthogonalize": [BOOLEAN],
    }

    def __init__(self, n_components=None, *, robust_first=True, second_moment="linear", orthogonalize=False,
                 solver="auto", precision="auto", workdir=None, n_oversamples=10, n_power_iter=1, max_power_iter=30, tol=1e-4,
                 random_state=0):
        self.n_components = n_components
        self.robust_first = robust_first
        self.second_moment = second_moment
        self.orthogonalize = orthogonalize
        self.solver = solver
        self.precision = precision
        self.workdir = workdir
        self.n_oversamples = n_oversamples
        self.n_power_iter = n_power_iter
        self.max_power_iter = max_power_iter
        self.tol = tol
        self.random_state = random_state

    def _check_parameter_combinations(self) -> None:
        super()._check_parameter_combinations()
        if self.second_moment == "quadratic" and self.solver == "randomized":
            raise WidemlError("LOL parameters second_moment='quadratic' and solver='randomized' do not go together; "
                              "QOQ's per-class directions come from the Gram, so use solver='gram' (or 'auto').")

    def _check_class_sizes(self, data) -> None:
        if self.second_moment == "quadratic":
            require_every_class(data.classes, data.codes, 2, "QOQ estimates a covariance per class")

    def _uses_medians(self) -> bool:
        return bool(self.robust_first)

    def _supports_randomized(self) -> bool:
        return self.second_moment == "linear"

    def _first_moment(self) -> str:
        return "median" if self.robust_first else "mean"

    def _method_name(self) -> str:
        return "QOQ (second_moment='quadratic')" if self.second_moment == "quadratic" else "LOL"

    def _n_delta_columns(self, n_classes, d):
        return min(d, n_classes - 1)

    def _randomized_projection(self, codes, n_classes, d, Q, Z, centroid_gram):
        return randomized_projection(codes, n_classes, d, Q, Z, centring="class",
                                     first_moment="median" if self.robust_first else "mean", centroid_gram=centroid_gram)

    def _projection(self, G, codes, n_classes, P, Q, n_features, n_components):
        return lol_projection(
            G, codes, n_classes, n_components,
            first_moment="median" if self.robust_first else "mean",
            second_moment=self.second_moment, P=P, Q=Q, orthogonalize=self.orthogonalize, n_features=n_features,
        )


class _EigenProjector(GramProjector):
    """The parameters PCA and rrLDA share (no centroid columns): see :class:`LOL` for their meaning."""

    def __init__(self, n_components=None, *, solver="auto", precision="auto", workdir=None,
                 n_oversamples=10, n_power_iter=1, max_power_iter=30, tol=1e-4, random_state=0):
        self.n_components = n_components
        self.solver = solver
        self.precision = precision
        self.workdir = workdir
        self.n_oversamples = n_oversamples
        self.n_power_iter = n_power_iter
        self.max_power_iter = max_power_iter
        self.tol = tol
        self.random_state = random_state


class PCA(_EigenProjector):
    """Principal components of the pooled-mean-centred data (labels ignored), from one Gram pass.

    Parameters
    ----------
    n_components : int, optional
        Default: the number of classes.
    solver, precision, workdir, n_oversamples, n_power_iter, max_power_iter, tol, random_state
        As for :class:`LOL`.

    Notes
    -----
    ``fit`` makes 2 passes over X with the Gram solver and q + 2 with the
    randomized one on a store (+ 3 in memory; q = ``n_power_iter_``, the
    power iterations it took to converge); ``transform`` makes 1. PCA is
    unsupervised: ``fit(X)`` needs no labels (then ``classes_`` is ``[0]`` and the default
    ``n_components`` is min(n_samples - 1, n_features, 10)); ``y`` is accepted (and used only
    for ``classes_``) so PCA drops into the same pipelines as LOL.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> X = np.random.default_rng(0).normal(size=(30, 200))
    >>> pca = wideml.PCA(n_components=2).fit(X)        # unsupervised: no labels needed
    >>> pca.transform(X).shape
    (30, 2)
    >>> pca.n_fit_passes_                              # the Gram pass, then the emit pass
    2
    """

    def _target_required(self) -> bool:
        return False

    def _component_bound(self, n: int, n_classes: int, p: int) -> int:
        return min(n - 1, p)

    def _default_components(self, data) -> int:
        if data.n_classes == 1:  # fitted without labels
            return max(1, min(data.n_samples - 1, data.n_features, 10))
        return super()._default_components(data)

    def _projection(self, G, codes, n_classes, P, Q, n_features, n_components):
        return pca_projection(G, n_components, n_features=n_features)

    def _centring(self) -> str:
        return "pooled"

    def _randomized_projection(self, codes, n_classes, d, Q, Z, centroid_gram):
        return randomized_projection(codes, n_classes, d, Q, Z, centring="pooled", first_moment=None)


class RRLDA(_EigenProjector):
    """Reduced-rank LDA: principal components of the class-centred data (class-conditional PCA).

    Parameters
    ----------
    n_components : int, optional
    solver, precision, workdir, n_oversamples, n_power_iter, max_power_iter, tol, random_state
        As for :class:`LOL`.

    Notes
    -----
    ``fit`` makes 2 passes over X with the Gram solver and q + 2 with the
    randomized one on a store (+ 3 in memory; q = ``n_power_iter_``, the
    power iterations it took to converge); ``transform`` makes 1.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 20)
    >>> X = rng.normal(size=(40, 500))
    >>> X[y == 1, :10] += 2.0                    # the classes differ in 10 of 500 features
    >>> rrlda = wideml.RRLDA(n_components=2).fit(X, y)
    >>> rrlda.transform(X).shape
    (40, 2)
    """

    def _component_bound(self, n: int, n_classes: int, p: int) -> int:
        return min(n - n_classes, p)

    def _projection(self, G, codes, n_classes, P, Q, n_features, n_components):
        return rrlda_projection(G, codes, n_classes, n_components, n_features=n_features)

    def _randomized_projection(self, codes, n_classes, d, Q, Z, centroid_gram):
        return randomized_projection(codes, n_classes, d, Q, Z, centring="class", first_moment=None)
