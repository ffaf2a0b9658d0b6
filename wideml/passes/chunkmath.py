"""Per-chunk arithmetic shared by the passes: working precision, centring, class sums and medians.

Every pass reads a full-height feature chunk (n x p_j) and does a handful of
memory-bound steps before its BLAS products. These helpers keep those steps to
as few sweeps over the chunk as possible:

- :func:`work_dtype` picks the dtype of the chunk products. ``"auto"`` (the
  default of every estimator) multiplies float32 (and narrower) data in
  float32 and everything else in float64; sums *across* chunks are always
  float64.
- :func:`centre` computes the feature means in one sweep (float32 partial
  sums added in float64 for float32 data), detects NaN/inf from them (a
  non-finite entry makes its column's sum non-finite), and returns the chunk
  centred by the means rounded to the working dtype.
  The rounded means are the centring vector ``c``: any vector keeps the raw
  Gram recoverable, and because float32 subtraction of nearby values is exact,
  centring by a float32 ``c`` loses nothing.
- :func:`class_medians` selects per-class medians exactly, equal to
  ``numpy.median`` (see :mod:`wideml.passes.median_select`: sorted runs
  merged around their middles for float32, a partition otherwise).
"""

from __future__ import annotations

import numpy as np

from wideml.exceptions import WidemlError
from wideml.passes.blocks import first_nonfinite
from wideml.passes.median_select import class_medians_float32, class_medians_partition
from wideml.runtime.scratch import scratch

#: Accepted values of every estimator's ``precision`` parameter.
PRECISIONS = ("auto", "float64", "float32")

#: Rows per float32 partial sum in :func:`centre` (relative error about sqrt(_SUM_ROWS) float32 ulps).
_SUM_ROWS = 256


def work_dtype(dtype, precision: str = "auto") -> np.dtype:
    """Dtype of a chunk's products for data of ``dtype`` under a ``precision`` setting.

    Parameters
    ----------
    dtype : numpy dtype
        Stored dtype of X.
    precision : {"auto", "float64", "float32"}
        ``"auto"`` gives float32 for float32/float16 data and for integers of
        at most 16 bits (all exact in float32), float64 otherwise.

    Returns
    -------
    numpy.dtype
    """
    if precision == "float64":
        return np.dtype(np.float64)
    if precision == "float32":
        return np.dtype(np.float32)
    if precision != "auto":
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    dt = np.dtype(dtype)
    if dt.kind == "f" and dt.itemsize <= 4:
        return np.dtype(np.float32)
    if dt.kind in "iub" and dt.itemsize <= 2:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def check_precision(precision) -> None:
    """Raise :class:`~wideml.exceptions.WidemlError` (one sentence) unless ``precision`` is one of :data:`PRECISIONS`."""
    if precision not in PRECISIONS:
        raise WidemlError(f"precision={precision!r} is not one of {', '.join(map(repr, PRECISIONS))}.")


def resolve_precision(precision: str, dtype) -> str:
    """The concrete precision name ("float32" or "float64") ``precision`` means for data of ``dtype``."""
    return work_dtype(dtype, precision).name


def centre(block: np.ndarray, offset: int, dt, *, reuse: bool = False, inplace: bool = False, mean: bool = True) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None, tuple | None]:
    """Centre a chunk by its feature means, checking for NaN/inf on the way.

    Parameters
    ----------
    block : ndarray of shape (n, p_j)
    offset : int
        Global index of the chunk's first feature (for the NaN/inf report).
    dt : numpy dtype
        Working dtype (see :func:`work_dtype`).
    reuse : bool, default False
        Write ``x`` into this thread's scratch buffer (see
        :mod:`wideml.runtime.scratch`) instead of a fresh array. Only for
        callers that drop ``x`` (and every view of it) before they return.
    inplace : bool, default False
        Overwrite ``block`` with ``x`` when it already has dtype ``dt`` (for
        chunks the caller owns, see :func:`wideml.passes.blocks.materialise`):
        no chunk-sized write to other memory, about 5x cheaper than ``reuse``
        on two cores. ``block`` holds the centred values afterwards.
    mean : bool, default True
        Return the feature means ``m``. Callers that do not need them, or
        that get them from class sums they compute anyway (``m = c + sum of
        the class sums of x / n``), pass False and save a sweep over the
        float32 chunk; ``m`` is then None.

    Returns
    -------
    x : ndarray of shape (n, p_j), dtype ``dt``, or None
        ``block - c``.
    m : ndarray of shape (p_j,), float64, or None
        The feature means.
    c : ndarray of shape (p_j,), float64, or None
        The centring vector actually subtracted (the means rounded to ``dt``).
    bad : tuple or None
        (feature index, sample, kind) of the first non-finite entry; when set,
        the other three are None.

    Notes
    -----
    For float32 data centred in float32 (the default for float32 stores) the
    means come from float32 partial sums over blocks of :data:`_SUM_ROWS` rows
    added in float64 (3.5x faster than a float64 reduction, which converts
    every entry). ``c`` depends only on the column's values, not on the chunk's
    width, so every pass recomputes the same ``c``. The returned ``m`` is then
    ``c`` plus the float32 mean of the centred chunk, which is exact to float32
    rounding of the *spread* of the data, not of its offset. Other dtypes use
    the float64 mean directly.
    """
    if block.dtype == np.float32 and dt == np.float32 and block.shape[0] > 0:
        found = _centre_float32(block, offset, reuse, inplace, mean)
        if found is not None:
            return found
    m = block.mean(axis=0, dtype=np.float64)
    if not np.isfinite(m).all():
        bad = first_nonfinite(block, int(offset))
        if bad is not None:
            return None, None, None, bad
    c_dt = m.astype(dt)
    x = block if inplace and block.dtype == dt and block.flags.writeable else _new_or_scratch(block.shape, dt, reuse)
    np.subtract(block, c_dt, out=x, dtype=dt)
    return x, m, c_dt.astype(np.float64), None


def _centre_float32(block: np.ndarray, offset: int, reuse: bool, inplace: bool, mean: bool = True):
    """The float32 fast path of :func:`centre`; None when the float32 sums overflow (the caller falls back)."""
    n = block.shape[0]
    c = float32_centring_vector(block)
    if not np.isfinite(c).all():
        bad = first_nonfinite(block, int(offset))
        if bad is not None:
            return None, None, None, bad
        return None  # finite data whose float32 sums overflow: use the float64 mean
    x = block if inplace and block.flags.writeable else _new_or_scratch(block.shape, np.float32, reuse)
    np.subtract(block, c, out=x)
    c64 = c.astype(np.float64)
    m = c64 + as_float64(np.full(n, 1.0 / n, dtype=np.float32) @ x) if mean else None
    return x, m, c64, None


def float32_centring_vector(block: np.ndarray) -> np.ndarray:
    """The centring vector :func:`centre` subtracts from a float32 chunk, shape (p_j,), float32.

    Float32 column sums over blocks of :data:`_SUM_ROWS` rows, added in float64,
    divided by n and rounded to float32. Each column's value depends only on
    that column, so every pass (and every chunking) recomputes the same vector.
    Non-finite where the column holds NaN/inf (or its float32 sums overflow).
    """
    if block.shape[1] == 1:  # numpy would sum a single column pairwise: give it a twin to keep the row-by-row order
        return float32_centring_vector(np.repeat(block, 2, axis=1))[:1]
    total = np.zeros(block.shape[1])
    for a in range(0, block.shape[0], _SUM_ROWS):
        part = block[a : a + _SUM_ROWS]
        if part.strides[1] != part.itemsize:  # row by row needs each row contiguous
            part = np.ascontiguousarray(part)
        total += part.sum(axis=0, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return (total / block.shape[0]).astype(np.float32)


def _new_or_scratch(shape, dtype, reuse: bool) -> np.ndarray:
    if reuse:
        return scratch(shape, dtype)
    return np.empty(shape, dtype=dtype)


def one_hot(codes: np.ndarray, n_classes: int, dtype=np.float64) -> np.ndarray:
    """Indicator matrix (n, n_classes) of class codes."""
    out = np.zeros((len(codes), n_classes), dtype=dtype)
    out[np.arange(len(codes)), codes] = 1
    return out


def class_sums(x: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-class column sums (n_classes, p_j) of x, as one (K x n)(n x p_j) product, returned in float64."""
    return (one_hot(codes, n_classes, x.dtype).T @ x).astype(np.float64, copy=False)


def means_from_class_sums(c: np.ndarray, sums: np.ndarray, n_rows: int) -> np.ndarray:
    """Feature means (p_j,) of a chunk centred by ``c``, from its class sums (K, p_j): c + (sum over classes) / n."""
    return c + sums.sum(axis=0) / n_rows


def class_medians(block: np.ndarray, codes: np.ndarray, n_classes: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Per-class medians (n_classes, p_j) of a chunk, in float64, equal to ``numpy.median``.

    Parameters
    ----------
    block : ndarray of shape (n, p_j)
    codes : ndarray of int, shape (n_sub,)
        Class codes of the rows used (all rows, or ``rows``).
    n_classes : int
    rows : ndarray of int, shape (n_sub,), optional
        Row subset of ``block`` (e.g. a cross-validation training set).

    Returns
    -------
    ndarray of shape (n_classes, p_j)
        NaN for a class without rows. The two middle values of an even count
        are averaged in float64.

    Notes
    -----
    One sweep over the chunk (see :mod:`wideml.passes.median_select`): float32
    chunks sort runs of at most 512 values per feature and class and merge
    windows around their middles (about 2x faster on classes of ~1000 rows);
    other dtypes partition each class's segment of a transposed block.
    """
    if block.dtype == np.float32:
        return class_medians_float32(block, codes, n_classes, rows)
    return class_medians_partition(block, codes, n_classes, rows)


def as_float64(a: np.ndarray) -> np.ndarray:
    """``a`` in float64 without a copy when it already is."""
    return np.asarray(a).astype(np.float64, copy=False)


__all__ = ["PRECISIONS", "as_float64", "centre", "means_from_class_sums", "check_precision", "float32_centring_vector", "class_medians", "class_sums", "one_hot", "resolve_precision", "work_dtype"]
