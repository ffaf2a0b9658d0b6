"""The one door for data: what every estimator's fit, predict and transform receive, as one object.

``fit_input(X, y)`` turns any training source into a :class:`FitInput` and
``new_input(X, n_features, ...)`` any new data into a :class:`NewInput`; no
estimator reads X any other way. The sources are adapters beside this module:
in-memory arrays (:mod:`~wideml.inputs.numpy_array`), dask, zarr and h5py
arrays (:mod:`~wideml.inputs.as_dask`, :mod:`~wideml.inputs.zarr_raw`,
:mod:`~wideml.inputs.h5py_raw`, :mod:`~wideml.inputs.external`), NIfTI images
(:mod:`~wideml.inputs.images`) and feature stores (whose labels are taken
when ``y`` is omitted). Nothing of X is read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
from sklearn.utils.validation import column_or_1d

from wideml.exceptions import WidemlError
from wideml.inputs.as_dask import as_dask_array
from wideml.inputs.images import images_as_input, is_image_input
from wideml.inputs.numpy_array import is_lazy_source, memory_input
from wideml.storage.featurestore import FeatureStore
from wideml.storage.layout import FeatureLayout, check_layout, layout_of
from wideml.storage.model_space import with_space
from wideml.storage.reader import HDF5Reader, ZarrReader
from wideml.storage.spatial import SpatialReference
from wideml.storage.writer import check_labels


@dataclass
class FitInput:
    """Validated training input, the same for every estimator.

    Attributes
    ----------
    X : dask.array.Array of shape (n_samples, n_features), full-height regular feature chunks
        For in-memory input it is made from ``numpy_X`` on first use, so a fit
        that runs its passes directly on the array builds no graph.
    y : ndarray of shape (n_samples,)
    classes : ndarray of shape (n_classes,)
    codes : ndarray of int64, shape (n_samples,)
    in_memory : bool
        True for numpy input: fitted p-sized arrays are then kept in memory,
        and passes may run directly on ``numpy_X`` (:meth:`FitPasses.run
        <wideml.runner.fit_runner.FitPasses.run>` runs a pass's ``local`` form).
    numpy_X : ndarray or None
        The original array when ``in_memory``.
    source : dict
        Provenance (store path or input type).
    layout : FeatureLayout or None
        The training features' layout (count, feature_shape, spatial reference,
        feature_ids fingerprint), recorded by estimators as ``feature_layout_``.
        For a store it is a :class:`~wideml.storage.model_space.TrainingLayout`
        that also carries the store's spatial reference and feature ids, so
        every estimator keeps them and ``save_model`` writes them.
    spatial : SpatialReference or None
        The image space of the features (a store ingested from images), else None.
    """

    dask_X: da.Array | None
    y: np.ndarray
    classes: np.ndarray
    codes: np.ndarray
    in_memory: bool
    numpy_X: np.ndarray | None
    source: dict
    layout: FeatureLayout | None = None
    spatial: SpatialReference | None = None

    @property
    def X(self) -> da.Array:
        if self.dask_X is None:
            self.dask_X = regular_feature_chunks(as_dask_array(self.numpy_X))
        return self.dask_X

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.numpy_X.shape) if self.dask_X is None else tuple(self.dask_X.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.numpy_X.dtype if self.dask_X is None else self.dask_X.dtype

    @property
    def n_samples(self) -> int:
        return int(self.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.shape[1])

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def regular_feature_chunks(X: da.Array) -> da.Array:
    """Full-height chunks of one width (the last may be shorter), as zarr outputs need."""
    widths = X.chunks[1]
    regular = all(w == widths[0] for w in widths[:-1]) and widths[-1] <= widths[0]
    if X.numblocks[0] > 1 or not regular:
        X = X.rechunk((X.shape[0], widths[0]))
    return X


def check_known_chunks(X) -> None:
    """Refuse a dask array whose chunk sizes are unknown (NaN), before anything uses its shape.

    Indexing with a dask boolean mask (``X[:, mask]``, ``X[X[:, 0] > 0]``)
    leaves dask not knowing how many samples or features each chunk holds.
    wideml needs the shape before any pass (labels per sample, feature counts,
    chunk-aligned outputs), and finding it means computing the mask, which may
    itself be a pass over X; so it is refused with the fix rather than
    computed behind the user's back (the passes a fit makes are counted).

    Raises
    ------
    WidemlError
        Naming the axis and ``X.compute_chunk_sizes()``.
    """
    if not isinstance(X, da.Array) or X.ndim != 2:
        return
    axes = [name for name, sizes in zip(("samples", "features"), X.chunks) if any(np.isnan(size) for size in sizes)]
    if axes:
        raise WidemlError(
            f"X is a dask array whose chunk sizes along its {' and '.join(axes)} are unknown (as after indexing with a dask "
            "boolean mask), so its shape is not known; call X = X.compute_chunk_sizes() first, or index with a numpy mask."
        )


def fit_input(X, y, *, require_labels: bool = True) -> FitInput:
    """Validate (X, y) from any supported source; no pass over X (metadata only).

    Every estimator's fit starts here.

    Parameters
    ----------
    X : array-like, dask array, zarr/h5py array, FeatureStore or images of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or None
        Labels of any kind (ints, bools, strings, ``StringDType``, pandas
        categoricals), kept as given (:func:`wideml.storage.labels.normalise_labels`);
        taken from the store when X is a FeatureStore and y is None.
    require_labels : bool, default True
        False for unsupervised methods (PCA, KernelPCA): without labels every
        sample is put in one class (``classes`` = [0]); labels given (or held
        by the store) may then have a single class.

    Returns
    -------
    FitInput
        In-memory input keeps its array (``numpy_X``) and builds its dask
        view only when a pass needs a graph.
    """
    check_known_chunks(X)
    source: dict = {}
    numpy_X = None
    layout = layout_of(X)
    spatial = None
    y = labels_of(X, y)
    if isinstance(X, FeatureStore):
        # a store on an object store is named by "url" (its checkpoints' fingerprint lists its objects: runner/resume.py)
        source = {"store": str(X.path), "format": X.format} if X.is_local else {"url": str(X.path), "format": X.format}
        spatial = X.spatial
        layout = with_space(layout, spatial, X.feature_ids, X.feature_table)
        X = X.X
    elif is_image_input(X):  # nibabel images or NIfTI paths: every voxel a feature (a mask: wideml.images_to_array)
        X, spatial, layout = images_as_input(X)
    if y is None and require_labels:
        raise WidemlError("requires y to be passed, but the target y is None; pass labels (or a store that holds y) to fit.")
    Xd = None
    if is_lazy_source(X):
        source = source or {"input": type(X).__module__.split(".")[0]}
        Xd = as_dask_array(X)
        if Xd.ndim != 2:
            raise WidemlError(f"X must be 2-D (n_samples, n_features), got shape {Xd.shape}; reshape it.")
        Xd = regular_feature_chunks(Xd)
        n = Xd.shape[0]
    else:
        numpy_X = memory_input(X)
        source = {"input": "numpy"}
        n = numpy_X.shape[0]
    if y is None:
        codes = np.zeros(n, dtype=np.int64)
        return FitInput(Xd, codes, np.zeros(1, dtype=np.int64), codes, numpy_X is not None, numpy_X, source, layout, spatial)
    y = _one_column(y)
    y = check_labels(y, n, what="y", min_classes=2 if require_labels else 1)  # unsupervised: labels only describe
    _refuse_continuous(y)
    classes, codes = np.unique(y, return_inverse=True)
    return FitInput(Xd, y, classes, codes.astype(np.int64).ravel(), numpy_X is not None, numpy_X, source, layout, spatial)


def _one_column(y):
    """A column vector (n, 1) of labels as 1-D, with scikit-learn's warning; anything else unchanged."""
    shape = getattr(y, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] == 1:
        return column_or_1d(np.asarray(y).astype(object) if np.asarray(y).dtype.kind == "T" else y, warn=True)
    return y


def _refuse_continuous(y: np.ndarray) -> None:
    """Float labels that are not whole numbers look like a regression target: refuse them (scikit-learn does too)."""
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        bad = y[y != np.round(y)][0]
        raise WidemlError(
            f"y holds continuous values (e.g. {float(bad)!r}), which look like a regression target, not class labels; "
            "give integer or string labels."
        )


@dataclass
class NewInput:
    """Validated new data for a fitted model (predict, transform), the same for every estimator.

    Attributes
    ----------
    numpy_X : ndarray of shape (m, n_features) or None
        The array itself for in-memory input (passes may run on it directly), else None.
    dask_X : dask.array.Array of shape (m, n_features) or None
        The feature-chunked view of lazy input (a store's X, dask, zarr, h5py);
        for in-memory input it is built on first use of :attr:`X`.
    """

    numpy_X: np.ndarray | None
    dask_X: da.Array | None

    @property
    def X(self) -> da.Array:
        """The data as a feature-chunked dask array (built from ``numpy_X`` on first use)."""
        if self.dask_X is None:
            self.dask_X = as_dask_array(self.numpy_X)
        return self.dask_X

    @property
    def in_memory(self) -> bool:
        return self.numpy_X is not None


def new_input(X, n_features: int, name: str = "the model", layout: FeatureLayout | None = None) -> NewInput:
    """Validate new data against the fitted features; no pass over X (metadata only).

    Parameters
    ----------
    X : array-like, pandas DataFrame, dask array, zarr/h5py array, FeatureStore or images of shape (n_samples, n_features)
    n_features : int
        The number of features the model was fitted on (always checked).
    name : str
        How errors name the model.
    layout : FeatureLayout, optional
        The layout recorded at fit (``feature_layout_``): X's feature_shape,
        spatial reference and feature_ids, where X has them, must match it
        unless the check is switched off (:func:`wideml.ignore_feature_layout`).

    Returns
    -------
    NewInput
        In-memory input keeps its array; lazy input is a feature-chunked dask view.

    Raises
    ------
    WidemlError
        One sentence saying what differs.
    """
    if is_image_input(X):
        X, _, image_layout = images_as_input(X)
        if image_layout.n_features == n_features:
            check_layout(layout, image_layout, data_name="the images", model_name=name)
    check_feature_layout(X, n_features, name, layout)
    if isinstance(X, FeatureStore):
        X = X.X
    Xm = memory_input(X, n_features, name)
    if Xm is not None:
        return NewInput(Xm, None)
    Xd = as_dask_array(X)
    if Xd.shape[1] != n_features:
        raise WidemlError(
            f"X has {Xd.shape[1]} features, but {name} is expecting {n_features} features as input; "
            "give data with the training features in the same order."
        )
    return NewInput(None, Xd)


def predict_input(X, n_features: int, name: str = "the model", layout: FeatureLayout | None = None) -> da.Array:
    """New data as a feature-chunked dask array: :func:`new_input`'s ``X`` (no pass over X)."""
    return new_input(X, n_features, name, layout).X


def labels_of(X: Any, y: Any) -> Any:
    """``y``, or the labels a feature store ``X`` holds when ``y`` is None (None when it holds none)."""
    if y is None and isinstance(X, FeatureStore):
        return X.y
    return y


def _store_reader(X: da.Array):
    """The store reader behind X if X is exactly a feature store's X (no slicing or arithmetic), else None."""
    graph = X.__dask_graph__()
    if len(getattr(graph, "layers", {})) != 2:
        return None
    for value in dict(graph).values():
        if isinstance(value, (ZarrReader, HDF5Reader)) and value.of_store and tuple(value.shape) == tuple(X.shape):
            return value
    return None


def store_path(X: Any) -> str | None:
    """Absolute path of the feature store X is (or whose own X it is, before any rechunking), else None (and for a store on an object store)."""
    if isinstance(X, FeatureStore):
        return str(Path(X.path).resolve()) if X.is_local else None
    if isinstance(X, da.Array):
        reader = _store_reader(X)
        return str(Path(reader.path).resolve()) if reader is not None else None
    return None


def check_feature_layout(X, n_features: int, name: str = "the model", layout: FeatureLayout | None = None) -> None:
    """Refuse X whose feature layout differs from the one recorded at fit (metadata only; see :func:`new_input`).

    A different number of features is left to the caller's count check; a
    dask array of unknown chunk sizes is refused (:func:`check_known_chunks`).
    """
    check_known_chunks(X)
    if layout is None:
        return
    data_layout = layout_of(X)
    if data_layout is not None and data_layout.n_features == n_features:
        data_name = f"the store {str(X.path)!r}" if isinstance(X, FeatureStore) else "X"
        check_layout(layout, data_layout, data_name=data_name, model_name=name)


__all__ = ["FitInput", "NewInput", "check_feature_layout", "check_known_chunks", "fit_input", "labels_of", "memory_input",
           "new_input", "predict_input", "regular_feature_chunks", "store_path"]
