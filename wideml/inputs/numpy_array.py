"""In-memory input (numpy arrays, ``numpy.memmap``, pandas frames, lists): validated as scikit-learn does, kept as it is.

Input that is not a 2-D matrix of real numbers (1-D, 3-D, complex, strings,
objects that are not numbers, no samples or no features) is refused in one
:class:`~wideml.exceptions.WidemlError` sentence, never scikit-learn's
multi-line message with a dump of the array. The sentences keep the phrases
scikit-learn's estimator checks look for ("Reshape your data", "Complex data
not supported", "0 feature(s) (shape=...) while a minimum of 1 is required").
"""

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


class InputTypeError(WidemlError, TypeError):
    """X holds values of a type that is not a number (e.g. a dict in an object array); a TypeError, as scikit-learn's."""


def _shape_text(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_matrix_meta(shape, dtype) -> None:
    """Refuse, from shape and dtype alone, what cannot be an (n_samples, n_features) matrix of real numbers.

    Raises
    ------
    WidemlError
        One sentence: not 2-D (with "Reshape your data" for 0-D and 1-D), complex ("Complex data not supported"),
        or not numeric.
    """
    ndim = len(shape)
    if ndim < 2:
        raise WidemlError(f"X is {ndim}-D (shape {_shape_text(shape)}) but must be 2-D (n_samples, n_features); Reshape your "
                          "data: X.reshape(1, -1) if it is one sample, X.reshape(-1, 1) if it is one feature.")
    if ndim > 2:
        raise WidemlError(f"X is {ndim}-D (shape {_shape_text(shape)}) but must be 2-D (n_samples, n_features); reshape it, "
                          "e.g. X.reshape(len(X), -1) to put each sample's values in one row.")
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise WidemlError(f"X has the complex dtype {dtype} (Complex data not supported); give real values, e.g. X.real or "
                          "np.abs(X).")
    if not (np.issubdtype(dtype, np.number) or dtype == bool):
        raise WidemlError(f"X has dtype {dtype}, which is not numeric; give floats or integers.")


def _refusal(X: Any, exc: Exception, min_samples: int) -> WidemlError:
    """The one sentence for an array-like that scikit-learn's ``check_array`` refused with ``exc``."""
    shape, dtype = getattr(X, "shape", None), getattr(X, "dtype", None)
    if shape is None:
        try:
            as_array = np.asarray(X)
        except Exception:  # noqa: BLE001 - ragged nested lists and the like: the reason is in exc
            as_array = None
        if as_array is not None:
            shape, dtype = as_array.shape, as_array.dtype
    if shape is not None:
        try:
            known = dtype is not None and not hasattr(X, "dtypes") and np.dtype(dtype).kind != "O"  # objects may be numbers
            check_matrix_meta(shape, dtype if known else np.float64)
        except WidemlError as refusal:
            return refusal
        if shape[0] < min_samples:
            return WidemlError(f"X has {int(shape[0])} sample(s) (shape={_shape_text(shape)}) while a minimum of {min_samples} "
                               "is required; give more samples.")
        if shape[1] < 1:
            return WidemlError(f"X has 0 feature(s) (shape={_shape_text(shape)}) while a minimum of 1 is required; give at "
                               "least one feature.")
    reason = " ".join(str(exc).split("\n")[0].split())[:160].rstrip(":. ")
    if "complex" in reason.lower():
        return WidemlError("X holds complex values (Complex data not supported); give real values, e.g. X.real or np.abs(X).")
    kind = InputTypeError if isinstance(exc, TypeError) else WidemlError
    return kind(f"X is not a 2-D matrix of numbers ({reason}); give floats or integers of shape (n_samples, n_features).")


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

    Raises
    ------
    WidemlError
        One sentence for input that is not a 2-D matrix of real numbers with
        enough samples and at least one feature (see the module docstring), or
        with the wrong number of features.
    """
    if is_lazy_source(X) or is_image_input(X):
        return None
    min_samples = 1 if n_features is not None else 2
    if (type(X) is np.ndarray and X.ndim == 2 and X.dtype in (np.float64, np.float32) and X.shape[0] >= min_samples
            and X.shape[1] >= 1):
        Xm = X
    else:
        try:
            Xm = check_array(X, dtype=(np.float64, np.float32), ensure_all_finite=False, ensure_min_samples=min_samples)
        except (ValueError, TypeError) as exc:
            raise _refusal(X, exc, min_samples) from None
    if n_features is not None and Xm.shape[1] != n_features:
        raise WidemlError(f"X has {Xm.shape[1]} features, but {name} is expecting {n_features} features as input; "
                          "give data with the training features in the same order.")
    return Xm


__all__ = ["InputTypeError", "check_matrix_meta", "is_lazy_source", "memory_input"]
