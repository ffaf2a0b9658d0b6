"""Kernel PCA over feature stores (the front end of the KPCA trick), and what kernel models share.

Fitting reads X once (the Gram pass, or with ``n_landmarks`` the n x m
landmark cross-Gram pass); every kernel is an elementwise function of that
pass's products. Mapping new samples reads the new data and the training data
once together (:func:`wideml.passes.crossgram.cross_gram_pass`), so a fitted
kernel model keeps a reference to its training data: the training store's
path when it was fitted on a store, otherwise the training matrix itself
(saved into the model store, chunked like X).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from wideml.algebra.kernels import Kernel, gram_sq_distances, kernel_from_dict
from wideml.algebra.kpca import DEFAULT_TOL, KPCAFit, fit_kpca
from wideml.estimators._resume import auto_resumable as _auto_resumable
from wideml.estimators._params import KERNEL_CONSTRAINTS, NONE, POSITIVE_INT, CheckedParams
from wideml.exceptions import StoreError, WidemlError
from wideml.passes.blocks import as_dask_array
from wideml.passes.crossgram import cross_gram_pass
from wideml.passes.gram import gram_pass
from wideml.runtime import compute


_CONTROLLER = None


def kernel_products(est, training: "TrainingData", landmarks: np.ndarray | None, codes: np.ndarray | None = None) -> "Products":
    """:func:`training_products`, resumable in a resumable run (:func:`wideml.estimators._resume.kernel_checkpoint`)."""
    from wideml.estimators._resume import kernel_checkpoint

    return training_products(training.array(), landmarks, kernel_checkpoint(est, training, landmarks, codes))


def one_blas_thread():
    """Context keeping BLAS single-threaded for the in-memory n x n algebra (eigh, learners).

    On a shared 2-core machine a multi-threaded OpenBLAS eigh of n = 1000 was
    measured 30x slower than single-threaded (spinning threads fight other
    processes); single-threaded LAPACK costs at most the second core when idle.
    """
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


# --------------------------------------------------------------------------- training data reference


def _store_reader(X: da.Array):
    """The store reader behind X if X is exactly a feature store's X (no slicing or arithmetic), else None."""
    from wideml.storage.reader import HDF5Reader, ZarrReader

    graph = X.__dask_graph__()
    layers = getattr(graph, "layers", {})
    if len(layers) != 2:
        return None
    for value in dict(graph).values():
        if isinstance(value, (ZarrReader, HDF5Reader)) and tuple(value.shape) == tuple(X.shape):
            return value
    return None


class TrainingData:
    """Where a kernel model's training X lives, to cross new data with it in one pass.

    Parameters
    ----------
    X : dask.array.Array or None
        The training data (lazy); None after loading a model that points at a store.
    path : str or None
        Absolute path of the training feature store, if X came from one.
    shape : tuple of int
    layout : FeatureLayout, optional
        The training features' layout (checked against new data, and against the
        training store when it is reopened).
    """

    def __init__(self, X: da.Array | None, path: str | None, shape: tuple[int, int], layout=None):
        self._X = X
        self.path = path
        self.shape = (int(shape[0]), int(shape[1]))
        self.layout = layout

    @classmethod
    def from_input(cls, X) -> "TrainingData":
        from wideml.storage.featurestore import FeatureStore

        if isinstance(X, FeatureStore):
            return cls(X.X, str(Path(X.path).resolve()), X.X.shape)
        Xd = as_dask_array(X)
        reader = _store_reader(Xd)
        path = str(Path(reader.path).resolve()) if reader is not None else None
        return cls(Xd, path, Xd.shape)

    def array(self) -> da.Array:
        """The training X as a dask array (reopening the training store if needed)."""
        if self._X is not None:
            return self._X
        from wideml.storage.featurestore import open_store

        if self.path is None or not os.path.exists(self.path):
            raise StoreError(
                f"this kernel model crosses new data with its training store {self.path!r}, which is no longer there; "
                "move the store back to that path, or refit the model."
            )
        store = open_store(self.path)
        if tuple(store.X.shape) != self.shape:
            raise StoreError(
                f"the training store {self.path!r} now has shape {tuple(store.X.shape)}, not the {self.shape} the model was "
                "fitted on; restore the original store, or refit the model."
            )
        from wideml.storage.layout import check_layout, layout_of

        check_layout(self.layout, layout_of(store), data_name=f"the training store {self.path!r}", model_name="this kernel model")
        self._X = store.X
        return self._X

    def state(self) -> tuple[dict, dict]:
        if self.path is not None:
            return {"path": self.path, "shape": list(self.shape)}, {}
        return {"path": None, "shape": list(self.shape)}, {"X_train": self._X}

    @classmethod
    def from_state(cls, state: dict, arrays: dict) -> "TrainingData":
        if state.get("path") is not None:
            return cls(None, state["path"], tuple(state["shape"]))
        return cls(as_dask_array(arrays["X_train"]), None, tuple(state["shape"]))


def training_input(X, y=None, *, supervised: bool = True):
    """Validate training input; returns (TrainingData, codes, classes) — codes/classes None if unsupervised.

    The training store's path is taken from the input as given (before any
    rechunking), so a model fitted on ``store.X`` can find its store again.
    """
    from wideml.estimators._input import _numpy_input, fit_input, regular_feature_chunks
    from wideml.storage.featurestore import FeatureStore

    path = None
    if isinstance(X, FeatureStore):
        path = str(Path(X.path).resolve())
    elif isinstance(X, da.Array):
        reader = _store_reader(X)
        path = str(Path(reader.path).resolve()) if reader is not None else None
    if supervised:
        fi = fit_input(X, y)  # labels of any kind, continuous targets refused
        return TrainingData(fi.X, path, fi.X.shape, fi.layout), fi.codes, fi.classes
    if isinstance(X, FeatureStore):
        Xd = X.X
    elif isinstance(X, da.Array) or type(X).__module__.startswith(("zarr", "h5py")):
        Xd = as_dask_array(X)
    else:
        Xd = as_dask_array(_numpy_input(X))
    if Xd.ndim != 2:
        raise WidemlError(f"X must be 2-D (n_samples, n_features), got shape {Xd.shape}; reshape it.")
    Xd = regular_feature_chunks(Xd)
    from wideml.storage.layout import layout_of

    return TrainingData(Xd, path, Xd.shape, layout_of(X)), None, None


# --------------------------------------------------------------------------- one-pass products


@dataclass
class Products:
    """Inner products and squared distances of samples against reference rows (one pass).

    ``inner`` and ``sq_dist`` are (n_rows, n_ref); ``landmarks`` are the
    reference rows' indices in the training set (None: all of them, so the
    arrays are the full n x n Gram and distance matrices).
    """

    inner: np.ndarray
    sq_dist: np.ndarray
    n_features: int
    landmarks: np.ndarray | None = None

    def reference_block(self) -> "Products":
        """The reference x reference block (what a kernel PCA is fitted on)."""
        if self.landmarks is None:
            return self
        idx = self.landmarks
        return Products(self.inner[idx], self.sq_dist[idx], self.n_features, None)

    def subset(self, rows: np.ndarray) -> "Products":
        """A principal sub-block (full Gram only): e.g. a CV training fold."""
        ix = np.ix_(rows, rows)
        return Products(self.inner[ix], self.sq_dist[ix], self.n_features, None)

    def kernel(self, kernel) -> np.ndarray:
        return kernel.from_products(self.inner, self.sq_dist, self.n_features)


def training_products(X: da.Array, landmarks: np.ndarray | None = None, checkpoint=None) -> Products:
    """One pass over the training X: the full Gram (landmarks None) or the n x m landmark cross-Gram.

    With a ``checkpoint`` (:func:`wideml.estimators._resume.kernel_products`) the pass is resumable.
    """
    from wideml.estimators import _resume
    from wideml.passes.crossgram import cross_from_state, cross_state

    if landmarks is None:
        stats = _resume.run_pass(checkpoint, lambda ck: gram_pass(X, checkpoint=ck), "Gram pass",
                                 to_state=_resume.gram_state, from_state=_resume.gram_from_state)
        return Products(stats.raw_gram(), gram_sq_distances(stats.G), int(X.shape[1]), None)
    cross = _resume.run_pass(checkpoint, lambda ck: cross_gram_pass(X, X, ref_rows=landmarks, checkpoint=ck), "landmark cross-Gram pass",
                             to_state=cross_state, from_state=cross_from_state)
    return Products(cross.raw_cross(), cross.sq_distances(), int(X.shape[1]), np.asarray(landmarks))


def new_products(X_new, training: TrainingData, landmarks: np.ndarray | None, name: str = "the model") -> Products:
    """One pass over new data and the training data together: their cross products (m x n_ref)."""
    from wideml.estimators._input import predict_input

    Xn = predict_input(X_new, training.shape[1], name, layout=training.layout)
    (cross,) = compute(cross_gram_pass(Xn, training.array(), ref_rows=landmarks), label="cross-Gram pass")
    return Products(cross.raw_cross(), cross.sq_distances(), int(Xn.shape[1]), None)


def choose_landmarks(n: int, n_landmarks: int, codes: np.ndarray | None, seed) -> np.ndarray:
    """Landmark rows for Nystrom: class-stratified (so every class has some) when labels are given, else uniform."""
    if not 2 <= n_landmarks <= n:
        raise WidemlError(f"n_landmarks={n_landmarks} must lie between 2 and the number of samples {n}; change it.")
    rng = np.random.default_rng(seed)
    if codes is None:
        return np.sort(rng.choice(n, n_landmarks, replace=False))
    counts = np.bincount(codes)
    quota = np.maximum(1, np.floor(counts / n * n_landmarks).astype(int))
    while quota.sum() > n_landmarks:
        quota[np.argmax(quota)] -= 1
    chosen = [rng.choice(np.flatnonzero(codes == c), min(q, counts[c]), replace=False) for c, q in enumerate(quota) if counts[c]]
    chosen = np.concatenate(chosen)
    rest = np.setdiff1d(np.arange(n), chosen)
    extra = rng.choice(rest, n_landmarks - len(chosen), replace=False) if n_landmarks > len(chosen) else np.zeros(0, int)
    return np.sort(np.concatenate([chosen, extra]).astype(np.int64))


@dataclass
class KernelBasis:
    """A kernel, its KPCA and the offset that centres Nystrom coordinates: maps kernel rows to coordinates."""

    kernel: object
    kpca: KPCAFit
    offset: np.ndarray

    def coordinates(self, products: Products) -> np.ndarray:
        """KPCA coordinates (m x r) of samples from their products against the reference rows."""
        return self.kpca.transform(products.kernel(self.kernel)) - self.offset

    def state(self) -> tuple[dict, dict]:
        st = {"kernel": self.kernel.to_dict(), "grand_mean": float(self.kpca.grand_mean), "n_nonzero": self.kpca.n_nonzero,
              "clipped": float(self.kpca.clipped)}
        arrays = {"kpca_eigenvalues": self.kpca.eigenvalues, "kpca_vectors": self.kpca.vectors,
                  "kpca_col_means": self.kpca.col_means, "kpca_offset": self.offset}
        return st, arrays

    @classmethod
    def from_state(cls, state: dict, arrays: dict) -> "KernelBasis":
        fit = KPCAFit(eigenvalues=np.asarray(arrays["kpca_eigenvalues"][...]), vectors=np.asarray(arrays["kpca_vectors"][...]),
                      col_means=np.asarray(arrays["kpca_col_means"][...]), grand_mean=float(state["grand_mean"]),
                      n_nonzero=int(state["n_nonzero"]), clipped=float(state["clipped"]))
        return cls(kernel_from_dict(state["kernel"]), fit, np.asarray(arrays["kpca_offset"][...]))


def fit_basis(kernel, products: Products, n_components: int | None, tol: float, at_most: bool = False) -> tuple[KernelBasis, np.ndarray]:
    """KPCA of the reference block, and the training coordinates (n x r).

    Exact (landmarks None): the coordinates are V L^{1/2}. Nystrom: the KPCA of
    the landmarks' kernel maps every training row, and the coordinates are then
    centred on the training mean (an approximation of the exact KPCA).
    """
    block = products.reference_block()
    fit = fit_kpca(block.kernel(kernel), n_components, tol=tol, at_most=at_most)
    if products.landmarks is None:
        return KernelBasis(kernel, fit, np.zeros(fit.n_components)), fit.train_coordinates()
    F = fit.transform(products.kernel(kernel))
    offset = F.mean(axis=0)
    return KernelBasis(kernel, fit, offset), F - offset


def make_kernel(kind: str, sigma: float, degree: int, coef0: float, gamma: float | None) -> Kernel:
    return Kernel(kind, sigma=sigma, degree=degree, coef0=coef0, gamma=gamma)


# --------------------------------------------------------------------------- the transformer


class KernelPCA(CheckedParams, TransformerMixin, BaseEstimator):
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
    embedding_ : ndarray of shape (n_samples, n_components_)
        Training coordinates.
    eigenvalues_ : ndarray of shape (n_components_,)
    n_components_ : int
    landmarks_ : ndarray of int or None
    n_features_in_ : int

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
        self.training_, _, _ = training_input(X, supervised=False)
        Xd = self.training_.array()
        n = Xd.shape[0]
        codes = None
        if y is not None:  # labels only stratify the landmarks: any kind, one per sample
            from wideml.storage.writer import check_labels

            codes = np.unique(check_labels(y, n, min_classes=1, what="y"), return_inverse=True)[1].ravel()
        self.landmarks_ = None if self.n_landmarks is None else choose_landmarks(n, int(self.n_landmarks), codes, self.random_state)
        products = kernel_products(self, self.training_, self.landmarks_, codes)
        with one_blas_thread():
            self.basis_, self.embedding_ = fit_basis(kernel, products, self.n_components, self.tol)
        self.kpca_ = self.basis_.kpca
        self.eigenvalues_ = self.kpca_.eigenvalues
        self.n_components_ = self.kpca_.n_components
        self.n_features_in_ = int(Xd.shape[1])
        return self

    def transform(self, X) -> np.ndarray:
        """Coordinates (m x r) of new samples; one pass over X and the training data together."""
        check_is_fitted(self, "basis_")
        return self.basis_.coordinates(new_products(X, self.training_, self.landmarks_, type(self).__name__))

    def _model_state(self):
        return kernel_model_state(self)

    @classmethod
    def _from_model_state(cls, params, state, arrays):
        est = cls(**params)
        est.basis_ = KernelBasis.from_state(state["basis"], arrays)
        est.training_ = TrainingData.from_state(state["training"], arrays)
        est.kpca_ = est.basis_.kpca
        est.embedding_ = np.asarray(arrays["embedding"][...])
        est.eigenvalues_ = est.kpca_.eigenvalues
        est.n_components_ = est.kpca_.n_components
        est.landmarks_ = np.asarray(arrays["landmarks"][...]) if "landmarks" in arrays else None
        est.n_features_in_ = int(state["n_features_in"])
        return est


__all__ = ["KernelBasis", "KernelPCA", "Products", "TrainingData", "choose_landmarks", "fit_basis", "new_products", "one_blas_thread", "training_input", "training_products"]


def kernel_model_state(est) -> tuple[dict, dict]:
    """Model-store state shared by the kernel estimators: KPCA basis, training data, embedding, landmarks."""
    st, arrays = est.basis_.state()
    tst, tarr = est.training_.state()
    arrays.update(tarr)
    arrays["embedding"] = est.embedding_
    if est.landmarks_ is not None:
        arrays["landmarks"] = est.landmarks_
    return {"basis": st, "training": tst, "n_features_in": est.n_features_in_}, arrays


class KernelEmbeddingMixin:
    """What the estimators that map KPCA coordinates linearly (``components_``) and then classify share.

    Subclasses set ``basis_``, ``training_``, ``landmarks_``, ``components_``, ``embedding_``,
    ``classes_``, ``_codes`` and ``n_features_in_`` in ``fit``, and implement ``_head()``
    returning the fitted classifier on the embedding and ``_fit_head()`` refitting it.
    """

    def fit_transform(self, X, y) -> np.ndarray:
        """Fit and return the training samples' embedding (n x d); one pass over X."""
        return self.fit(X, y).embedding_

    def transform(self, X) -> np.ndarray:
        """Embedding (m x d) of new samples; one pass over X and the training data together."""
        check_is_fitted(self, "components_")
        return self.basis_.coordinates(new_products(X, self.training_, self.landmarks_, type(self).__name__)) @ self.components_.T

    def predict(self, X) -> np.ndarray:
        """Class labels; one pass over X and the training data together."""
        check_is_fitted(self, "components_")
        return self.classes_[self._head().predict(self.transform(X))]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (m x n_classes); one pass over X and the training data together."""
        check_is_fitted(self, "components_")
        return self._head().predict_proba(self.transform(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _model_state(self):
        state, arrays = kernel_model_state(self)
        arrays.update({"components": self.components_, "codes": self._codes, "classes": self.classes_})
        return state, arrays

    @classmethod
    def _from_model_state(cls, params, state, arrays):
        est = cls(**params)
        est.basis_ = KernelBasis.from_state(state["basis"], arrays)
        est.training_ = TrainingData.from_state(state["training"], arrays)
        est.components_ = np.asarray(arrays["components"][...])
        est.embedding_ = np.asarray(arrays["embedding"][...])
        est._codes = np.asarray(arrays["codes"][...])
        from wideml.storage.labels import classes_from_model

        est.classes_ = classes_from_model(arrays["classes"])  # text classes: zarr reads StringDType, back to <U
        est.landmarks_ = np.asarray(arrays["landmarks"][...]) if "landmarks" in arrays else None
        est.n_features_in_ = int(state["n_features_in"])
        est._restore_extra(arrays)
        est._fit_head()
        return est

    def _restore_extra(self, arrays) -> None:
        """Hook for subclass-specific arrays saved by ``_model_state``."""

