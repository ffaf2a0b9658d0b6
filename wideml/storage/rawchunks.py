"""Chunk-aligned writes straight into the chunk files of an uncompressed zarr v3 array.

The passes write their p-sized outputs (feature means, class means and
medians, loadings) chunk by chunk into arrays that wideml itself created
uncompressed. Going through zarr costs about 3 ms of mostly Python work per
write, serialised on zarr's event loop; on a 2 GB store that was half a second
of a 2.5 s pass. For such arrays a chunk file is just the chunk's values in C
order (edge chunks padded to the full chunk shape), so an aligned write is one
``ndarray.tofile``. Anything else (compressed arrays, other key encodings,
unaligned writes) falls back to zarr.
"""

from __future__ import annotations

import json
import os
import threading

import numpy as np

_layouts: dict[tuple, tuple | None] = {}
_lock = threading.Lock()


def _layout(array_path: str):
    """(shape, chunks, dtype, fill) when the array's chunk files are raw C-order bytes, else None (cached)."""
    meta_path = os.path.join(array_path, "zarr.json")
    try:
        key = (array_path, os.stat(meta_path).st_mtime_ns)  # a rewritten array is looked at afresh
    except OSError:
        return None
    with _lock:
        if key in _layouts:
            return _layouts[key]
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    layout = None
    codecs = meta.get("codecs", [])
    enc = meta.get("chunk_key_encoding", {})
    grid = meta.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
    if (
        meta.get("node_type") == "array"
        and len(codecs) == 1
        and codecs[0].get("name") == "bytes"
        and codecs[0].get("configuration", {}).get("endian", "little") == "little"
        and enc.get("name") == "default"
        and enc.get("configuration", {}).get("separator", "/") == "/"
        and grid is not None
    ):
        fill = meta.get("fill_value", 0)
        fill = float(fill) if isinstance(fill, str) else fill  # "NaN", "Infinity"
        layout = (tuple(meta["shape"]), tuple(grid), np.dtype(meta["data_type"]).newbyteorder("<"), fill)
    with _lock:
        if len(_layouts) > 4096:  # one entry per array ever written: keep the cache bounded
            _layouts.clear()
        _layouts[key] = layout
    return layout


def write_aligned(array_path: str, values: np.ndarray, start: int, axis: int) -> bool:
    """Write ``values`` at ``start`` along ``axis`` of a 1-D or 2-D array, chunk file by chunk file.

    Parameters
    ----------
    array_path : str
        Folder of a zarr v3 array.
    values : ndarray
        Covers whole chunks along ``axis`` (the last may be the array's edge
        chunk) and the array's full extent along the other axis, which must be
        a single chunk.
    start : int
        Offset along ``axis``; a multiple of the chunk length.
    axis : int
        The chunked axis.

    Returns
    -------
    bool
        False (nothing written) when the array or the write does not qualify;
        the caller then writes through zarr.
    """
    layout = _layout(array_path)
    if layout is None or values.ndim != len(layout[0]) or values.ndim not in (1, 2):
        return False
    shape, chunks, dtype, fill = layout
    other = 1 - axis if values.ndim == 2 else None
    if other is not None and (chunks[other] != shape[other] or values.shape[other] != shape[other]):
        return False
    size = chunks[axis]
    stop = start + values.shape[axis]
    if start % size or (stop % size and stop != shape[axis]) or stop > shape[axis]:
        return False
    for c0 in range(start, stop, size):
        cut = [slice(None)] * values.ndim
        cut[axis] = slice(c0 - start, min(c0 + size, stop) - start)
        part = values[tuple(cut)]
        if part.shape[axis] < size:  # the edge chunk is stored at full size
            pad = [(0, 0)] * values.ndim
            pad[axis] = (0, size - part.shape[axis])
            part = np.pad(part, pad, constant_values=fill)
        key = [0] * values.ndim
        key[axis] = c0 // size
        path = os.path.join(array_path, "c", *map(str, key))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.ascontiguousarray(part, dtype=dtype).tofile(path)
    return True


__all__ = ["write_aligned"]
