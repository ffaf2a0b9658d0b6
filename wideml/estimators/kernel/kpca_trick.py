"""The KPCA trick (Chatpatanasiri et al.): kernel -> KPCA coordinates -> unchanged metric learner -> 1-NN.

``KPCATrick(learner="nca"|"lmnn"|"dne", kernel=..., selection=...)`` fits in
**one pass** over X: the Gram pass gives inner products and squared
distances, every base kernel (linear, polynomial, the 21 scaled RBFs) is an
elementwise function of them, and kernel selection (CV over sigma, the
alignment QP, the unweighted sum), the KPCA eigen-solve and the learner are
in-memory n x n / n x r algebra. ``predict`` makes one pass over the new data
and the training data together (the cross-Gram).

The learners are scikit-learn estimators with ``components_`` (d x r):
scikit-learn's ``NeighborhoodComponentsAnalysis`` and this module's
:class:`LMNN` and :class:`DNE` (metric-learn 0.7.0, the maintained LMNN, does
not run with scikit-learn >= 1.8: it passes the removed ``force_all_finite``).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, clone
from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from wideml.algebra.kernel_selection import alignment_weights, cv_select, stratified_folds
from wideml.algebra.kernels import PAPER_SIGMAS, CombinedKernel, rbf_family
from wideml.algebra.kpca import DEFAULT_TOL, fit_kpca
from wideml.algebra.metric.dne import fit_dne
from wideml.algebra.metric.lmnn import fit_lmnn
from wideml.estimators.class_sizes import require_class_spread
from wideml.estimators.fitted import array
from wideml.estimators.kernel.basis import fit_basis, make_kernel
from wideml.estimators.kernel.embedding import KernelEmbeddingMixin
from wideml.estimators.kernel.products import Products, choose_landmarks, kernel_passes, kernel_products
from wideml.estimators.kernel.training import training_input
from wideml.runner.fit_runner import algebra_threads
from wideml.runner.resume import auto_resumable
from wideml.estimators.params import (KERNEL_CONSTRAINTS, NONE, POSITIVE_INT, CheckedParams, Interval, Options, Satisfies,
                                      positive_reals)
from wideml.exceptions import WidemlError

LEARNERS = ("nca", "lmnn", "dne", "none")
#: Learners whose objective needs same-class neighbours (some class with 2 samples or more).
_NEIGHBOUR_LEARNERS = ("nca", "lmnn", "dne")
SELECTIONS = ("fixed", "cv", "alignment", "sum")


# --------------------------------------------------------------------------- learners


def _labels(y) -> tuple[np.ndarray, np.ndarray]:
    check_classification_targets(y)
    y = np.asarray(y)
    if y.ndim != 1:
        raise WidemlError(f"y must be 1-D (one label per sample), got shape {y.shape}; flatten it.")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise WidemlError(f"y has only 1 class ({classes[0]!r}); metric learning needs at least 2 classes.")
    return classes, codes.ravel()


class LMNN(TransformerMixin, BaseEstimator):
    """Large-margin nearest neighbour metric learning (paper §2.2), M = L^T L.

    Parameters
    ----------
    n_neighbors : int, default 3
        Target neighbours per sample (same class, nearest in the input space).
    c : float, default 1.0
        Weight of the hinge (impostor) term; margin 1.
    n_components : int or None, default None
        Rows of L; None means the input dimension.
    init : {"identity", "pca"}, default "identity"
    max_iter : int, default 50
        L-BFGS iterations (the hinge is not smooth; more iterations rarely help 1-NN).
    tol : float, default 1e-7

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        L; the learned distance is ||L x - L x'||.
    n_iter_, loss_, n_active_ : int, float, int
    """

    def __init__(self, n_neighbors: int = 3, c: float = 1.0, n_components: int | None = None, init: str = "identity",
                 max_iter: int = 50, tol: float = 1e-7):
        self.n_neighbors = n_neighbors
        self.c = c
        self.n_components = n_components
        self.init = init
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, y, target_sq_dist: np.ndarray | None = None) -> "LMNN":
        """Learn L from X (n x D, in memory) and labels; ``target_sq_dist`` (n x n) picks the target neighbours."""
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        self.classes_, codes = _labels(y)
        L, info = fit_lmnn(X, codes, n_neighbors=self.n_neighbors, c=self.c, n_components=self.n_components, init=self.init,
                           max_iter=self.max_iter, tol=self.tol, target_sq_dist=target_sq_dist)
        self.components_ = L
        self.n_iter_, self.loss_, self.n_active_ = info["n_iter"], info["loss"], info["n_active"]
        return self

    def transform(self, X) -> np.ndarray:
        check_is_fitted(self, "components_")
        return validate_data(self, X, reset=False, dtype=np.float64) @ self.components_.T


class DNE(TransformerMixin, BaseEstimator):
    """Discriminant neighbourhood embedding (paper §2.3): orthonormal rows, one eigen-solve.

    Parameters
    ----------
    n_neighbors : int, default 3
        k for both the same-class and the other-class neighbourhoods.
    n_components : int or None, default None
        d; None means the number of negative eigenvalues of X^T (D - W) X.

    Attributes
    ----------
    components_ : ndarray of shape (d, n_features)
    eigenvalues_ : ndarray of shape (n_features,)
    """

    def __init__(self, n_neighbors: int = 3, n_components: int | None = None):
        self.n_neighbors = n_neighbors
        self.n_components = n_components

    def fit(self, X, y, target_sq_dist: np.ndarray | None = None) -> "DNE":
        """Learn A from X (n x D, in memory) and labels; ``target_sq_dist`` (n x n) builds the neighbour graph."""
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        self.classes_, codes = _labels(y)
        self.components_, self.eigenvalues_ = fit_dne(X, codes, n_neighbors=self.n_neighbors, n_components=self.n_components,
                                                      target_sq_dist=target_sq_dist)
        return self

    def transform(self, X) -> np.ndarray:
        check_is_fitted(self, "components_")
        return validate_data(self, X, reset=False, dtype=np.float64) @ self.components_.T


def make_learner(name, params: dict | None = None, random_state=0):
    """A fresh learner: "nca" (scikit-learn's NCA), "lmnn", "dne", "none" (identity), or any estimator with components_."""
    params = dict(params or {})
    if not isinstance(name, str):
        return clone(name).set_params(**params) if params else clone(name)
    if name == "nca":
        params.setdefault("random_state", random_state)
        return NeighborhoodComponentsAnalysis(**params)
    if name == "lmnn":
        return LMNN(**params)
    if name == "dne":
        return DNE(**params)
    if name == "none":
        if params:
            raise WidemlError(f"learner='none' takes no learner_params, got {sorted(params)}; drop them.")
        return None
    raise WidemlError(f"learner {name!r} is not one of {', '.join(LEARNERS)}; pick one of them (or pass an estimator).")


def fit_learner(learner, F: np.ndarray, codes: np.ndarray, target_sq_dist: np.ndarray | None) -> np.ndarray:
    """Fit the learner on coordinates F (n x r); return its linear map (d x r)."""
    if learner is None:
        return np.eye(F.shape[1])
    if target_sq_dist is not None and isinstance(learner, (LMNN, DNE)):
        learner.fit(F, codes, target_sq_dist=target_sq_dist)
    else:
        learner.fit(F, codes)
    if not hasattr(learner, "components_"):
        raise WidemlError(f"{type(learner).__name__} has no components_ after fit, so it is not a linear metric learner; pass one that has.")
    return np.asarray(learner.components_)


# --------------------------------------------------------------------------- the KPCA trick


def _is_learner(value) -> bool:
    return hasattr(value, "fit") and not isinstance(value, type)


class KPCATrick(CheckedParams, KernelEmbeddingMixin, ClassifierMixin, TransformerMixin, BaseEstimator):
    """Kernelised metric learning by the KPCA trick, with 1-NN under the learned metric.

    Parameters
    ----------
    learner : {"nca", "lmnn", "dne", "none"} or estimator, default "nca"
        The Mahalanobis learner run unchanged on the KPCA coordinates ("none":
        1-NN on the coordinates themselves).
    kernel : {"rbf", "poly", "linear"}, default "rbf"
        Kernel for ``selection="fixed"``; ``rbf`` is the scaled RBF
        exp(-||x - y||^2 / (2 p sigma^2)), p = n_features. With ``linear`` the
        trick reproduces the learner on the centred input (up to rotation).
    sigma : float, default 1.0
        RBF width per feature (> 0), for ``selection="fixed"``.
    degree, coef0, gamma : polynomial kernel (gamma x.y + coef0)^degree; gamma None means 1/p.
    selection : {"fixed", "cv", "alignment", "sum"}, default "fixed"
        ``cv``: the sigma in ``sigmas`` with the best ``cv``-fold accuracy of
        learner + 1-NN; ``alignment``: the normalised alignment QP (Eq. 13) over
        the RBFs of ``sigmas``, rescaled so that k(x, x) = 1; ``sum``: the
        unweighted sum of those RBFs (k(x, x) = number of sigmas). All of them
        reuse the one Gram: the fit stays one pass.
    sigmas : sequence of float or None, default None
        The base-kernel grid; None is the paper's 21 values 0.01 ... 1000.
    cv : int, default 5
        Folds for ``selection="cv"`` (stratified, seeded by ``random_state``).
    n_components : int or None, default None
        KPCA components r (None: all non-zero ones, the lossless trick; the
        paper suggests 100-200 to speed the learner up). More than the kernel's
        non-zero eigenvalues is an error with ``selection="fixed"``; when a
        kernel is selected from a grid it is an upper bound.
    learner_params : dict or None, default None
        Keyword arguments of the learner (e.g. ``{"n_neighbors": 3}`` for LMNN
        or DNE, ``{"max_iter": 50}`` for NCA).
    n_neighbors : int, default 1
        k of the final k-NN classifier (the paper uses 1).
    target_space : {"kpca", "input"}, default "kpca"
        Where LMNN and DNE take target neighbours from: the KPCA space (=
        feature-space distances) or the input space (Euclidean on X, which the
        paper used for its unweighted-kernel runs).
    tol : float, default 1e-10
        KPCA eigenvalue tolerance (relative).
    n_landmarks : int or None, default None
        Nystrom approximation on this many class-stratified landmark samples
        (kernel selection then runs on the landmarks' block).
    random_state : int, default 0

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    kernel_ : Kernel or CombinedKernel
        The selected kernel.
    basis_ : KernelBasis
    components_ : ndarray of shape (d, r)
        The learner's map on KPCA coordinates.
    embedding_ : ndarray of shape (n_samples, d)
        Training samples in the learned metric.
    selection_scores_ : ndarray or None
        CV accuracy per sigma (``cv``) or alignment weights (``alignment``).
    n_features_in_ : int
    n_fit_passes_ : int
        Passes over X the fit made (1).

    Notes
    -----
    Passes over X: ``fit`` 1 (Gram; with ``n_landmarks`` the landmark
    cross-Gram), whatever the selection; ``predict``/``transform``/``score`` 1
    over the new data and the training data together.
    """

    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        "learner": [Options(*LEARNERS), Satisfies(_is_learner, "an estimator with fit and components_")],
        "selection": [Options(*SELECTIONS)],
        "sigmas": [Satisfies(positive_reals, "a non-empty list of positive numbers"), NONE],
        "cv": [Interval(2, integer=True)],
        "n_components": [POSITIVE_INT, NONE],
        "learner_params": [Satisfies(lambda v: isinstance(v, dict), "a dict of the learner's keyword arguments"), NONE],
        "n_neighbors": [POSITIVE_INT],
        "target_space": [Options("kpca", "input")],
    }

    def __init__(self, learner="nca", kernel: str = "rbf", sigma: float = 1.0, degree: int = 2, coef0: float = 1.0,
                 gamma: float | None = None, selection: str = "fixed", sigmas=None, cv: int = 5,
                 n_components: int | None = None, learner_params: dict | None = None, n_neighbors: int = 1,
                 target_space: str = "kpca", tol: float = DEFAULT_TOL, n_landmarks: int | None = None, random_state: int = 0):
        self.learner = learner
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma = gamma
        self.selection = selection
        self.sigmas = sigmas
        self.cv = cv
        self.n_components = n_components
        self.learner_params = learner_params
        self.n_neighbors = n_neighbors
        self.target_space = target_space
        self.tol = tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    # ---- checks

    def _check_parameter_combinations(self) -> None:
        if self.target_space == "input" and self.n_landmarks is not None:
            raise WidemlError("KPCATrick parameters target_space='input' and n_landmarks do not go together (input-space "
                              "neighbours need the full Gram); use n_landmarks=None or target_space='kpca'.")
        if self.learner == "none" and self.learner_params:
            raise WidemlError(f"KPCATrick parameter learner='none' takes no learner_params, got {sorted(self.learner_params)}; drop them.")

    def _sigmas(self):
        return tuple(PAPER_SIGMAS if self.sigmas is None else self.sigmas)

    # ---- kernel selection (no pass: slices of the one Gram)

    def _fold_score(self, kernel, products: Products, codes, train, test, target_sq) -> float:
        sub = products.subset(train)
        fit = fit_kpca(sub.kernel(kernel), self._fold_components(len(train)), tol=self.tol, at_most=True)
        F = fit.train_coordinates()
        cross = Products(products.inner[np.ix_(test, train)], products.sq_dist[np.ix_(test, train)], products.n_features)
        Ft = fit.transform(cross.kernel(kernel))
        learner = make_learner(self.learner, self.learner_params, self.random_state)
        tsq = None if target_sq is None else target_sq[np.ix_(train, train)]
        A = fit_learner(learner, F, codes[train], tsq)
        nn = KNeighborsClassifier(n_neighbors=int(self.n_neighbors)).fit(F @ A.T, codes[train])
        return float(np.mean(nn.predict(Ft @ A.T) == codes[test]))

    def _fold_components(self, n_train):
        return None if self.n_components is None else min(int(self.n_components), n_train - 1)

    def _select_kernel(self, products: Products, codes: np.ndarray, target_sq):
        self.selection_scores_ = None
        if self.selection == "fixed":
            return make_kernel(self.kernel, self.sigma, self.degree, self.coef0, self.gamma)
        bases = rbf_family(self._sigmas())
        if self.selection == "sum":
            return CombinedKernel(tuple(bases), tuple(1.0 for _ in bases))
        if self.selection == "alignment":
            kernels = [products.kernel(b) for b in bases]
            weights, norms = alignment_weights(kernels, codes, int(codes.max()) + 1)
            # Alignment is scale-free; rescale so k(x, x) = sum_s w_s / norm_s = 1 (the RBFs have k(x, x) = 1).
            weights = weights / float(np.sum(weights / norms))
            self.selection_scores_ = weights
            return CombinedKernel(tuple(bases), tuple(float(w) for w in weights), tuple(float(s) for s in norms))
        folds = stratified_folds(codes, int(self.cv), self.random_state)
        best, scores = cv_select(lambda c, tr, te: self._fold_score(bases[c], products, codes, tr, te, target_sq), len(bases), folds)
        self.selection_scores_ = scores
        return bases[best]

    # ---- fit / predict

    @auto_resumable
    def fit(self, X, y=None) -> "KPCATrick":
        """Fit on X (n x p: numpy, dask, zarr, h5py or a FeatureStore) and labels y (a store's own when None); one pass over X."""
        self._validate_parameters()
        training, data = training_input(X, y)
        if isinstance(self.learner, str) and self.learner in _NEIGHBOUR_LEARNERS:  # before the pass: the labels say it all
            require_class_spread(data.classes, data.codes, f"the {self.learner.upper()} metric learner compares each sample with "
                                 "samples of its own class")
        self.training_ = training
        codes, self.classes_, n = data.codes, data.classes, data.n_samples
        self.landmarks_ = None if self.n_landmarks is None else choose_landmarks(n, int(self.n_landmarks), codes, self.random_state)
        passes = kernel_passes(self, self.training_, codes, data)
        products = kernel_products(passes, self.training_, self.landmarks_)
        with algebra_threads(n):  # n x n: kernel selection, the KPCA, the learner's neighbour distances
            self._fit_algebra(products, codes)
        self.n_features_in_ = data.n_features
        passes.record()
        return self

    def _fit_algebra(self, products: Products, codes: np.ndarray) -> None:
        """Everything after the pass: kernel selection, KPCA, learner, k-NN (in memory, no pass)."""
        block = products.reference_block()
        block_codes = codes if self.landmarks_ is None else codes[self.landmarks_]
        block_target = block.sq_dist if self.target_space == "input" else None
        self.kernel_ = self._select_kernel(block, block_codes, block_target)
        self.basis_, F = fit_basis(self.kernel_, products, self.n_components, self.tol, at_most=self.selection != "fixed")
        target_sq = None
        if self.target_space == "input":
            if self.landmarks_ is not None:
                raise WidemlError("target_space='input' needs the full Gram; use n_landmarks=None or target_space='kpca'.")
            target_sq = products.sq_dist
        self.learner_ = make_learner(self.learner, self.learner_params, self.random_state)
        self.components_ = fit_learner(self.learner_, F, codes, target_sq)
        self.embedding_ = F @ self.components_.T
        self._codes = codes
        self._fit_head()

    def _head(self):
        return self.nn_

    def _fit_head(self) -> None:
        self.nn_ = KNeighborsClassifier(n_neighbors=int(self.n_neighbors)).fit(self.embedding_, self._codes)

    _fitted = KernelEmbeddingMixin._fitted + (array("selection_scores_", optional=True, save=np.asarray),)

    def _load_more(self, state_in: dict, arrays: dict) -> None:
        super()._load_more(state_in, arrays)
        self.kernel_ = self.basis_.kernel


__all__ = ["DNE", "KPCATrick", "LMNN", "LEARNERS", "SELECTIONS", "fit_learner", "make_learner"]
