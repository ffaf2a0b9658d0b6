"""Label vectors of any kind turned into one of four plain numpy dtypes, so they round-trip unchanged.

Labels may come as Python lists, numpy arrays of ints, bools, floats or
strings (fixed-width ``<U``, bytes, object, numpy 2 ``StringDType``) or pandas
objects (Series, Categorical of strings or ints). wideml keeps them as

- ``int64`` for integers (Python or numpy, signed or unsigned),
- ``bool`` for booleans,
- ``float64`` for real numbers,
- fixed-width unicode ``<U`` for text,

so predictions come back as the labels that were given (strings as str,
ints as ints). Missing values (None, NaN, pandas NA, and the texts ``NA``,
``N/A``, ``#N/A``, ``<NA>``, ``NaN``, ``null``, ``None``, empty or blank, in any case: see
:mod:`wideml.storage.label_cells`) and labels that mix strings with numbers
are refused with one sentence: a class called "NA" or "None" would be a
silent wrong answer.
"""

from __future__ import annotations

import numbers

import numpy as np

from wideml.exceptions import WidemlError
from wideml.storage.label_cells import clip, listed, missing_mask


def _named(what: str) -> str:
    """``what`` as the plural subject of a sentence: ``y`` → "the labels y" (never "y contain ...")."""
    if what == "labels":
        return "the labels"
    return what if " " in what or what.endswith("s") else f"the labels {what}"


def label_text(value) -> str:
    """One class label as messages show it: the plain value's repr (``0``, ``'case'``), never numpy's (``np.int64(0)``)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return repr(value.item() if isinstance(value, np.generic) else value)


def _refuse_missing(arr: np.ndarray, what: str) -> None:
    """Refuse missing labels (None, NaN, NA, "n/a", "" ...), naming the first samples (0-based)."""
    where = np.flatnonzero(missing_mask(arr.ravel()))
    what = _named(what)
    if where.size == 1:
        first = arr.ravel()[where[0]]
        shown = repr(clip(first)) if isinstance(first, (str, bytes)) else repr(first)
        raise WidemlError(f"{what} hold a missing value ({shown}) at sample {where[0]}; give every sample a label, or leave that sample out.")
    if where.size:
        raise WidemlError(f"{what} hold {where.size} missing values such as NA, None or NaN (samples {listed(where.tolist())}); "
                          "give every sample a label, or leave those samples out.")


def _object_labels(arr: np.ndarray, what: str) -> np.ndarray:
    """An object array's labels as int64, bool, float64 or str; missing and mixed kinds refused."""
    flat = arr.ravel()
    _refuse_missing(flat, what)
    what = _named(what)
    texts = [isinstance(v, (str, bytes, np.str_, np.bytes_)) for v in flat]
    if all(texts):
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in flat], dtype=str).reshape(arr.shape)
    if any(texts):
        first_text = flat[texts.index(True)]
        first_other = flat[texts.index(False)]
        raise WidemlError(
            f"{what} mix text and non-text values (e.g. {first_text!r} and {first_other!r}); give labels of one kind, "
            "all strings or all numbers."
        )
    if all(isinstance(v, (bool, np.bool_)) for v in flat):
        return flat.astype(bool).reshape(arr.shape)
    if all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in flat):
        return _integers(np.array([int(v) for v in flat], dtype=object), what).reshape(arr.shape)
    if all(isinstance(v, numbers.Real) for v in flat):
        return np.array([float(v) for v in flat], dtype=np.float64).reshape(arr.shape)
    kinds = sorted({type(v).__name__ for v in flat})
    raise WidemlError(f"{what} hold values of type {', '.join(kinds)}; give integer, boolean or string labels.")


def _integers(values: np.ndarray, what: str) -> np.ndarray:
    what = _named(what)
    info = np.iinfo(np.int64)
    if values.size and (values.max() > info.max or values.min() < info.min):
        raise WidemlError(f"{what} hold integers beyond the int64 range; give smaller integer codes or strings.")
    return values.astype(np.int64)


def normalise_labels(values, what: str = "labels") -> np.ndarray:
    """Labels as int64, bool, float64 or ``<U`` str (any shape; callers check 1-D).

    Parameters
    ----------
    values : array-like
        Labels of any kind: list, numpy array (int, uint, bool, float, ``<U``,
        bytes, object, ``StringDType``), pandas Series or Categorical.
    what : str
        How the error sentences name the labels ("y", "labels").

    Returns
    -------
    ndarray
        Same shape, dtype int64, bool, float64 or ``<U``.
    """
    if hasattr(values, "dtype") and str(getattr(values, "dtype", "")) == "category" and hasattr(values, "astype"):
        values = values.astype(object)  # pandas categorical: its values, NaN for missing
    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(bool)
    if kind in "iu":
        return _integers(arr, what) if kind == "u" and arr.dtype.itemsize == 8 else arr.astype(np.int64)
    if kind == "f":
        if arr.size and not np.all(np.isfinite(arr)):
            bad = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
            raise WidemlError(f"{_named(what)} must not contain NaN or inf (sample {bad} holds {float(arr.ravel()[bad])}); "
                              "give every sample a finite label.")
        return arr.astype(np.float64)
    if kind in "SUT":
        _refuse_missing(arr, what)
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in arr.ravel()], dtype=str).reshape(arr.shape)
    if kind == "O":
        return _object_labels(arr, what)
    raise WidemlError(f"{_named(what)} have dtype {arr.dtype}, which wideml does not take as labels; give integer, boolean or string labels.")


def classes_from_model(array) -> np.ndarray:
    """A model's saved ``classes`` array read back in the dtype the labels were fitted with.

    Text classes are stored as zarr variable-length strings, which zarr reads
    back as numpy ``StringDType`` (or object); they become ``<U`` again here,
    so scikit-learn and numpy comparisons behave as at fit time.
    """
    arr = np.asarray(array[...])
    if arr.dtype.kind in "OSUT":
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in arr.ravel()], dtype=str).reshape(arr.shape)
    return arr


__all__ = ["classes_from_model", "label_text", "normalise_labels"]
