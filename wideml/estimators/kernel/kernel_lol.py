"""Kernel LOL: LOL on KPCA coordinates (the LOL paper's "next step", by the KPCA trick).

LOL only needs inner products of centred samples, so with F the KPCA
coordinates (n x r, centred) it runs on G = F F^T, which is the centred kernel
matrix itself when all non-zero components are kept: the class-mean
differences and class-centred principal directions are taken in the kernel's
feature space. The embedding is linear in F, A = F^T B (r x d), and LDA (the
LOL paper's classifier) or QDA classifies it. With ``kernel="linear"`` this is
linear LOL (same embedding up to rotation).
"""

from __future__ import annotations

from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin

from wideml.algebra.kpca import DEFAULT_TOL
from wideml.algebra.lol import lol_projection
from wideml.estimators.class_sizes import check_classifier_labels, fit_classifier
from wideml.estimators.classifier import make_classifier
from wideml.estimators.kernel.basis import fit_basis, make_kernel
from wideml.estimators.kernel.embedding import KernelEmbeddingMixin
from wideml.estimators.kernel.products import choose_landmarks, kernel_passes, kernel_products
from wideml.estimators.kernel.training import training_input
from wideml.runner.fit_runner import algebra_threads
from wideml.runner.resume import auto_resumable
from wideml.estimators.params import KERNEL_CONSTRAINTS, NONE, POSITIVE_INT, CheckedParams, Options
from wideml.exceptions import WidemlError


class KernelLOL(CheckedParams, KernelEmbeddingMixin, ClassifierMixin, TransformerMixin, BaseEstimator):
    """LOL in a kernel's feature space, then LDA (or QDA), from one Gram pass.

    Parameters
    ----------
    n_components : int, default 10
        d, the LOL embedding dimension: K-1 class-mean differences, then the
        top class-centred directions (in feature space).
    kernel : {"rbf", "poly", "linear"}, default "rbf"
        ``rbf`` is the scaled RBF exp(-||x - y||^2 / (2 p sigma^2)).
    sigma : float, default 1.0
    degree, coef0, gamma : polynomial kernel (gamma x.y + coef0)^degree; gamma None means 1/p.
    kpca_components : int or None, default None
        KPCA components LOL runs on (None: all non-zero ones, exact).
    first_moment : {"mean"}, default "mean"
        Class means (class medians are not linear in feature space).
    second_moment : {"linear", "quadratic"}, default "linear"
        ``quadratic`` is QOQ (per-class covariances) in feature space.
    classifier : {"lda", "qda"}, default "lda"
    tol : float, default 1e-10
    n_landmarks : int or None, default None
        Nystrom approximation on this many class-stratified landmarks.
    random_state : int, default 0

    Attributes
    ----------
    classes_, basis_, components_ (d x r), embedding_ (n x d), classifier_, n_features_in_
    n_fit_passes_ : int
        Passes over X the fit made (1).

    Notes
    -----
    Passes over X: ``fit`` 1; ``predict``/``transform``/``score`` 1 over the new
    data and the training data together.
    """

    _parameter_constraints = {
        **KERNEL_CONSTRAINTS,
        "n_components": [POSITIVE_INT],
        "kpca_components": [POSITIVE_INT, NONE],
        "first_moment": [Options("mean")],
        "second_moment": [Options("linear", "quadratic")],
        "classifier": [Options("lda", "qda")],
    }

    def __init__(self, n_components: int = 10, kernel: str = "rbf", sigma: float = 1.0, degree: int = 2, coef0: float = 1.0,
                 gamma: float | None = None, kpca_components: int | None = None, first_moment: str = "mean",
                 second_moment: str = "linear", classifier: str = "lda", tol: float = DEFAULT_TOL,
                 n_landmarks: int | None = None, random_state: int = 0):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma = gamma
        self.kpca_components = kpca_components
        self.first_moment = first_moment
        self.second_moment = second_moment
        self.classifier = classifier
        self.tol = tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    @auto_resumable
    def fit(self, X, y=None) -> "KernelLOL":
        """Fit on X (n x p: numpy, dask, zarr, h5py or a FeatureStore) and labels y (a store's own when None); one pass over X."""
        self._validate_parameters()  # first_moment: class medians are not defined in feature space, so 'mean' only
        kernel = make_kernel(self.kernel, self.sigma, self.degree, self.coef0, self.gamma)
        training, data = training_input(X, y)
        _check_labels(self, data)  # before the pass: the labels say whether the classifier can be fitted
        self.training_ = training
        codes, self.classes_, n = data.codes, data.classes, data.n_samples
        self.landmarks_ = None if self.n_landmarks is None else choose_landmarks(n, int(self.n_landmarks), codes, self.random_state)
        passes = kernel_passes(self, self.training_, codes, data)
        products = kernel_products(passes, self.training_, self.landmarks_)
        with algebra_threads(n):  # n x n: the KPCA (or n x m with landmarks), G = F F^T and LOL on it
            self.basis_, F = fit_basis(kernel, products, self.kpca_components, self.tol)
            G = F @ F.T
            proj = lol_projection(G, codes, len(self.classes_), int(self.n_components), first_moment="mean",
                                  second_moment=self.second_moment)
        self.components_ = (F.T @ proj.B).T
        self.embedding_ = F @ self.components_.T
        self._codes = codes
        self._fit_head()
        self.n_features_in_ = data.n_features
        passes.record()
        return self

    def _head(self):
        return self.classifier_

    def _fit_head(self) -> None:
        self.classifier_ = fit_classifier(make_classifier(self.classifier), self.embedding_, self._codes)


def _check_labels(est: KernelLOL, data) -> None:
    """Refuse, before the pass, labels the classifier cannot be fitted on and more directions than the samples allow."""
    d, n = int(est.n_components), data.n_samples
    check_classifier_labels(est.classifier, data.classes, data.codes, d)
    if d > n - 1:  # K - 1 centroid differences + at most n - K centred directions (per class n_k - 1 for QOQ)
        raise WidemlError(f"n_components={d} is larger than kernel LOL allows on {n} samples: at most n_samples - 1 = {n - 1} "
                          "directions; lower n_components.")


__all__ = ["KernelLOL"]
