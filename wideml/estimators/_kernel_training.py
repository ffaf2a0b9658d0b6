"""Where a kernel model's training X lives, so that new data can be crossed with it in one pass.

A fitted kernel model keeps a reference to its training data: the training
store's path when it was fitted on a store, otherwise the training matrix
itself (saved into the model store, chunked like X).
"""

from __future__ import annotations

import os
from pathlib import Path

import dask.array as da
import numpy as np

from wideml.exceptions import StoreError, WidemlError
from wideml.passes.blocks import as_dask_array


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


def training_input(X, y=None, *, supervised: bool = True) -> tuple[TrainingData, np.ndarray | None, np.ndarray | None]:
    """Validate training input; returns (TrainingData, codes, classes) — codes/classes None if unsupervised.

    Parameters
    ----------
    X : array-like, dask array, zarr/h5py array or FeatureStore of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional
        Labels of any kind (``supervised`` only; continuous targets are refused).
    supervised : bool, default True

    Returns
    -------
    training : TrainingData
    codes : ndarray of shape (n_samples,) or None
    classes : ndarray of shape (n_classes,) or None

    Notes
    -----
    Reads no X. The training store's path is taken from the input as given
    (before any rechunking), so a model fitted on ``store.X`` can find its store again.
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


__all__ = ["TrainingData", "training_input"]
