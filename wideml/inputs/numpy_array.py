"""In-memory input (numpy arrays, ``numpy.memmap``, pandas frames, lists): validated as scikit-learn does, kept as it is."""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
from sklearn.utils import check_array

from wideml.exceptions import WidemlError
from wideml.inputs.images import is_image_input
from wideml.storage.featurestore import FeatureStore


def is_lazy_source(X: Any) -> bool:
    """Dask, zarr and h5py arrays (and stores): read by the passes, never loaded whole."""
    return isinstance(X, (FeatureStore, da.Array)) or hasattr(X, "store_path") or type(X).__module__.startswith(("zarr", "h5py"))


def memory_input(X: Any, n_features: int | None = None, name: str = "the model") -> np.ndarray | None:
    """A validated in-memory array for numpy-like input; None for dask, zarr, h5py arrays, stores and images.

    A float64/float32 2-D ndarray is taken as it is (what ``check_array``
    would return, without its overhead); other array-likes go through
    scikit-learn's ``check_array``. With ``n_features`` (new data for a fitted
    model) the feature count is checked.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_features : int, optional
        The fitted model's feature count (new data); then one sample is enough.
    name : str
        How errors name the model.

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64 or float32, or None
    """
    if is_lazy_source(X) or is_image_input(X):
        return None
    min_samples = 1 if n_features is not None else 2
    if (type(X) is np.ndarray and X.ndim == 2 and X.dtype in (np.float64, np.float32) and X.shape[0] >= min_samples
            and X.shape[1] >= 1):
        Xm = X
    else:
        Xm = check_array(X, dtype=(np.float64, np.float32), ensure_all_finite=False, ensure_min_samples=min_samples)
    if n_features is not None and Xm.shape[1] != n_features:
        raise WidemlError(f"X has {Xm.shape[1]} features, but {name} is expecting {n_features} features as input; "
                          "give data with the training features in the same order.")
    return Xm


__all__ = ["is_lazy_source", "memory_input"]
