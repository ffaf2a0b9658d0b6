"""Kernel PCA over feature stores: the front end of the KPCA trick.

Fitting reads X once (the Gram pass, or with ``n_landmarks`` the n x m
landmark cross-Gram pass: :mod:`wideml.estimators.kernel.products`); every
kernel is an elementwise function of that pass's products, and the KPCA is
in-memory algebra (:mod:`wideml.estimators.kernel.basis`). Mapping new
samples reads the new data and the training data once together, so a fitted
kernel model keeps a reference to its training data
(:mod:`wideml.estimators.kernel.training`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from wideml.algebra.kpca import DEFAULT_TOL
from wideml.estimators.kernel.basis import fit_basis, make_kernel
from wideml.estimators.fitted import FittedState
from wideml.estimators.kernel.embedding import KernelModelState
from wideml.estimators.kernel.products import choose_landmarks, kernel_passes, kernel_products, new_products
from wideml.estimators.kernel.training import training_input
from wideml.runner.fit_runner import algebra_threads
from wideml.runner.resume import auto_resumable as _auto_resumable
from wideml.estimators.params import KERNEL_CONSTRAINTS, NONE, POSITIVE_INT, CheckedParams
from wideml.inputs.door import labels_of
from wideml.storage.writer import check_labels


class KernelPCA(CheckedParams, KernelModelState, FittedState, TransformerMixin, BaseEstimator):
    """Kernel PCA of wide data from one Gram pass (the KPCA trick's coordinates).

    Parameters
    ----------
    n_components : int or None, default None
        r, the number of components; None keeps every non-zero one (lossless:
        distances between training points equal feature-space distances,
        Proposition 3). More than the number of non-zero eigenvalues is an error.
    kernel : {"rbf", "poly", "linear"}, default "rbf"
        ``rbf`` is the scaled RBF exp(-||x - y||^2 / (2 p sigma^2)) with p the
        number of features.
    sigma : float, default 1.0
        RBF width per feature (> 0).
    degree : int, default 2
        Polynomial degree: (gamma x.y + coef0)^degree.
    coef0 : float, default 1.0
    gamma : float or None, default None
        Polynomial scale; None means 1 / n_features.
    tol : float, default 1e-10
        Eigenvalues <= tol * largest count as zero.
    n_landmarks : int or None, default None
        If set, a Nystrom approximation on this many landmark samples (random,
        class-stratified when y is given): the fit forms n x n_landmarks, not n x n.
    random_state : int, default 0
        Seed of the landmark choice.

    Attributes
    ----------
    kpca_ : wideml.algebra.kpca.KPCAFit
    basis_ : KernelBasis
    embedding_ : ndarray of shape (n_samples, ``n_components_``)
        Training coordinates.
    eigenvalues_ : ndarray of shape (``n_components_``,)
    n_components_ : int
    landmarks_ : ndarray of int or None
    n_features_in_ : int
    n_fit_passes_ : int
        Passes over X the fit made (1).

    Notes
    -----
    Passes over X: ``fit`` 1 (``fit_transform`` too: it returns ``embedding_``);
    ``transform`` 1 over the new data and the training data together.
    """

    _parameter_constraints = {**KERNEL_CONSTRAINTS, "n_components": [POSITIVE_INT, NONE]}

    def __init__(self, n_components: int | None = None, kernel: str = "rbf", sigma: float = 1.0, degree: int = 2,
                 coef0: float = 1.0, gamma: float | None = None, tol: float = DEFAULT_TOL, n_landmarks: int | None = None,
                 random_state: int = 0):
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma = gamma
        self.tol = tol
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    def fit(self, X, y=None) -> "KernelPCA":
        """Fit on X (n x p: numpy, dask, zarr, h5py or a FeatureStore); one pass over X."""
        self._fit(X, y)
        return self

    def fit_transform(self, X, y=None) -> np.ndarray:
        """Fit and return the training coordinates (n x r); one pass over X."""
        return self._fit(X, y).embedding_

    @_auto_resumable
    def _fit(self, X, y):
        self._validate_parameters()
        kernel = make_kernel(self.kernel, self.sigma, self.degree, self.coef0, self.gamma)
        self.training_, data = training_input(X, supervised=False)
        n = data.n_samples
        codes = None
        y = labels_of(X, y)  # a store's own labels when y is omitted
        if y is not None:  # labels only stratify the landmarks: any kind, one per sample
            codes = np.unique(check_labels(y, n, min_classes=1, what="y"), return_inverse=True)[1].ravel()
        self.landmarks_ = None if self.n_landmarks is None else choose_landmarks(n, int(self.n_landmarks), codes, self.random_state)
        passes = kernel_passes(self, self.training_, codes, data)
        products = kernel_products(passes, self.training_, self.landmarks_)
        with algebra_threads(n if self.landmarks_ is None else len(self.landmarks_)):  # the reference block's eigenproblem
            self.basis_, self.embedding_ = fit_basis(kernel, products, self.n_components, self.tol)
        self.kpca_ = self.basis_.kpca
        self.eigenvalues_ = self.kpca_.eigenvalues
        self.n_components_ = self.kpca_.n_components
        self.n_features_in_ = data.n_features
        passes.record()
        return self

    def transform(self, X) -> np.ndarray:
        """Coordinates (m x r) of new samples; one pass over X and the training data together."""
        check_is_fitted(self, "basis_")
        return self.basis_.coordinates(new_products(X, self.training_, self.landmarks_, type(self).__name__))

    def _load_more(self, state_in: dict, arrays: dict) -> None:
        super()._load_more(state_in, arrays)
        self.kpca_ = self.basis_.kpca
        self.eigenvalues_ = self.kpca_.eigenvalues
        self.n_components_ = self.kpca_.n_components


__all__ = ["KernelPCA"]
