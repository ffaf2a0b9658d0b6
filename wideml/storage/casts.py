"""Casts that lose nothing, or an error: how ingest and ``write_store`` turn source values into the stored dtype.

A cast that would change a value is refused unless asked for explicitly
(``allow_lossy_cast=True``, ``wideml ingest --allow-lossy-cast``):

* float -> integer: NaN/inf, values with a fractional part, values out of the
  integer type's range (integer-valued floats in range cast exactly and pass);
* integer -> narrower integer: values out of range (wrap-around);
* integer -> float: integers the float cannot hold exactly (beyond 2**24 for float32);
* wider float -> float16: refused from the dtypes alone (about 3 significant digits);
* float64 -> float32: finite values that overflow to inf or underflow to 0
  (rounding to float32's 7 digits is the documented default and passes).

The values are checked block by block as they are copied (memory of one
block), and the error names the source, the stored dtype and the first
offending value with its sample and feature.
"""

from __future__ import annotations

import numpy as np

from wideml.exceptions import WidemlError

_ANYWAY = "or pass --allow-lossy-cast (allow_lossy_cast=True) to cast anyway"


def _fix(dtype: np.dtype) -> str:
    wider = "float64 (--dtype float64)" if dtype.kind == "f" else "floats (--dtype float32 or float64)"
    return f"store it as {wider} {_ANYWAY}"


def check_cast_dtypes(src, dst, source: str, allow_lossy: bool = False) -> None:
    """Refuse, from the dtypes alone, a cast that always loses information (a wider float to float16).

    Parameters
    ----------
    src, dst : dtype
        Source and stored dtypes.
    source : str
        How the error names the source.
    allow_lossy : bool
        Allow it anyway.
    """
    src, dst = np.dtype(src), np.dtype(dst)
    if allow_lossy:
        return
    if dst.kind == "f" and src.kind == "f" and dst.itemsize < 4 and src.itemsize > dst.itemsize:
        raise WidemlError(
            f"{source} holds {src} values, which {dst} would round to about 3 significant digits; "
            f"store them as float32 or float64 (--dtype float32) {_ANYWAY}."
        )


def _lossy_mask(block: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, str] | None:
    """(mask of the entries the cast ``block -> out`` changes, why) or None when nothing can change."""
    src, dst = block.dtype, out.dtype
    if dst.kind in "iu":
        info = np.iinfo(dst)
        if src.kind == "f":
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(block) | (block != np.trunc(block)) | (block < info.min) | (block > info.max)
            return bad, f"is not an integer in {dst}'s range [{info.min}, {info.max}]"
        if src.kind in "iub":
            if src.kind == "b" or np.can_cast(src, dst, "safe"):
                return None
            return (block < info.min) | (block > info.max), f"is out of {dst}'s range [{info.min}, {info.max}]"
        return None
    if dst.kind != "f":
        return None
    if src.kind == "f":
        if src.itemsize <= dst.itemsize:
            return None
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            bad = (np.isinf(out) & np.isfinite(block)) | ((out == 0) & (block != 0))
        return bad, f"overflows to inf or underflows to 0 in {dst}"
    if src.kind in "iu":
        limit = 2 ** (np.finfo(dst).nmant + 1)
        if src.itemsize < 8 and np.iinfo(src).max <= limit and np.iinfo(src).min >= -limit:
            return None
        big = (block > limit) | (block < -limit)
        if big.any():
            with np.errstate(over="ignore", invalid="ignore"):
                big[big] = out[big].astype(np.longdouble) != block[big].astype(np.longdouble)
        return big, f"is not exactly representable in {dst}"
    return None


def checked_cast(block, dtype, *, source: str, allow_lossy: bool = False, row0: int = 0, col0: int = 0) -> np.ndarray:
    """``block`` as ``dtype``, or a WidemlError naming the first value the cast would change.

    Parameters
    ----------
    block : array-like of shape (rows, features)
        Values read from the source.
    dtype : dtype
        The stored dtype.
    source : str
        How the error names the source (a path, ``"X"``).
    allow_lossy : bool, default False
        Cast without checking.
    row0, col0 : int
        Position of ``block[0, 0]`` in the source, for the error.

    Returns
    -------
    ndarray
        The cast block (``block`` itself when the dtypes already agree).
    """
    block = np.asarray(block)
    dtype = np.dtype(dtype)
    if block.dtype == dtype:
        return block
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        out = block.astype(dtype)
    if allow_lossy:
        return out
    check_cast_dtypes(block.dtype, dtype, source)
    found = _lossy_mask(block, out)
    if found is None:
        return out
    bad, why = found
    if not bad.any():
        return out
    flat = int(np.argmax(bad.reshape(-1)))
    pos = np.unravel_index(flat, bad.shape)
    value = block[pos].item()
    where = (f"sample {row0 + int(pos[0])}, feature {col0 + int(pos[1])}" if block.ndim == 2
             else f"position {tuple(int(p) for p in pos)}")
    raise WidemlError(f"{source} holds {value!r} at {where}, which {why}, so storing it as {dtype} would change it; {_fix(dtype)}.")


class CastCheck:
    """Picklable cast of source blocks to the stored dtype, refusing lossy casts (see :func:`checked_cast`).

    Parameters
    ----------
    dtype : dtype
        The stored dtype.
    source : str
        How errors name the source.
    allow_lossy : bool, default False
    """

    def __init__(self, dtype, source: str, allow_lossy: bool = False):
        self.dtype, self.source, self.allow_lossy = np.dtype(dtype), str(source), bool(allow_lossy)

    def __call__(self, block, row0: int = 0, col0: int = 0) -> np.ndarray:
        return checked_cast(block, self.dtype, source=self.source, allow_lossy=self.allow_lossy, row0=row0, col0=col0)


__all__ = ["CastCheck", "check_cast_dtypes", "checked_cast"]
