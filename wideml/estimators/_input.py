"""Turning user input (numpy, dask, zarr, h5py, FeatureStore) into what the passes need."""

from __future__ import annotations

from dataclasses import dataclass

import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError
from wideml.passes.blocks import as_dask_array
from wideml.storage.featurestore import FeatureStore
from wideml.storage.writer import check_labels


@dataclass
class FitInput:
    """Validated training input.

    Attributes
    ----------
    X : dask.array.Array of shape (n_samples, n_features), full-height regular feature chunks
    y : ndarray of shape (n_samples,)
    classes : ndarray of shape (n_classes,)
    codes : ndarray of int64, shape (n_samples,)
    in_memory : bool
        True for numpy input: fitted p-sized arrays are then kept in memory.
    numpy_X : ndarray or None
        The original array when ``in_memory``.
    source : dict
        Provenance (store path or input type).
    """

    X: da.Array
    y: np.ndarray
    classes: np.ndarray
    codes: np.ndarray
    in_memory: bool
    numpy_X: np.ndarray | None
    source: dict

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

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


def _numpy_input(X, min_samples: int = 2):
    """sklearn-style validation for array-likes that are not dask/zarr/h5py/stores."""
    from sklearn.utils import check_array

    return check_array(X, dtype=(np.float64, np.float32), ensure_all_finite=False, ensure_min_samples=min_samples)


def fit_input(X, y) -> FitInput:
    """Validate (X, y) from any supported source; no pass over X (metadata only)."""
    source: dict = {}
    numpy_X = None
    if isinstance(X, FeatureStore):
        source = {"store": str(X.path), "format": X.format}
        if y is None:
            y = X.y
        X = X.X
    if y is None:
        raise WidemlError("requires y to be passed, but the target y is None; pass labels (or a store that holds y) to fit.")
    if isinstance(X, da.Array) or hasattr(X, "store_path") or type(X).__module__.startswith(("zarr", "h5py")):
        source = source or {"input": type(X).__module__.split(".")[0]}
        Xd = as_dask_array(X)
    else:
        numpy_X = _numpy_input(X)
        source = {"input": "numpy"}
        Xd = as_dask_array(numpy_X)
    if Xd.ndim != 2:
        raise WidemlError(f"X must be 2-D (n_samples, n_features), got shape {Xd.shape}; reshape it.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        from sklearn.utils.validation import column_or_1d

        y = column_or_1d(y, warn=True)
    y = check_labels(y, Xd.shape[0], what="y")
    classes, codes = np.unique(y, return_inverse=True)
    return FitInput(regular_feature_chunks(Xd), y, classes, codes.astype(np.int64), numpy_X is not None, numpy_X, source)


def predict_input(X, n_features: int, name: str = "the model") -> da.Array:
    """Validate new data against the fitted feature count; returns a feature-chunked dask array."""
    if isinstance(X, FeatureStore):
        X = X.X
    if not (isinstance(X, da.Array) or type(X).__module__.startswith(("zarr", "h5py"))):
        X = _numpy_input(X, min_samples=1)
    Xd = as_dask_array(X)
    if Xd.shape[1] != n_features:
        raise WidemlError(
            f"X has {Xd.shape[1]} features, but {name} is expecting {n_features} features as input; "
            "give data with the training features in the same order."
        )
    return Xd
