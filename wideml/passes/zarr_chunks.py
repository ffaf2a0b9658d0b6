"""Every chunk of a zarr array handed to the API must be stored: an absent chunk is refused, never read as the fill value.

zarr reads a chunk that has no stored data as the array's fill value. For a
feature store that is always an error (wideml writes every chunk, and
:func:`wideml.open_store` lists them). A plain zarr array made by the user is
ambiguous: zarr 3 skips writing a chunk equal to the fill value by default
(``write_empty_chunks=False``), so an absent chunk is either a block that really
is all fill value or data that was deleted or never written, and nothing in
the array tells the two apart. Guessing "fill" could fit silently on zeros;
guessing "missing" at worst refuses a valid array with one sentence that says
how to proceed. So an absent chunk is refused unless the array says that
absent chunks mean the fill value (attribute ``wideml = {"missing_chunks":
"fill"}``, the same key a feature store uses).

The check is one listing: of the array's folder on a local filesystem (with
each shard's index for a sharded array, :mod:`wideml.storage.integrity`), else
of the store's keys through zarr. A store that cannot list its keys is refused.
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

from wideml.exceptions import StoreError


def declares_fill(X: Any) -> bool:
    """Whether the zarr array says absent chunks mean its fill value (attribute ``wideml`` with ``missing_chunks: "fill"``)."""
    try:
        marks = X.attrs.get("wideml")
    except Exception:  # noqa: BLE001 - unreadable attributes declare nothing
        return False
    return isinstance(marks, dict) and marks.get("missing_chunks") == "fill"


def _where(X: Any) -> str:
    """``at /abs/path`` of a local array, else ``in a MemoryStore (path 'x')``."""
    from wideml.runtime.cluster_check import zarr_location

    location = zarr_location(X)
    if location is not None:
        return "at " + os.path.normpath(os.path.join(os.path.abspath(location[0]), location[1] or ""))
    store = getattr(getattr(X, "store_path", None), "store", None)
    path = getattr(getattr(X, "store_path", None), "path", "")
    return f"in a {type(store).__name__}" + (f" (path {path!r})" if path else "")


def _missing_error(X: Any, key: tuple, grid: tuple, more: int, unit: str = "chunk") -> StoreError:
    from wideml.storage.integrity import describe_chunk

    fill = getattr(getattr(X, "metadata", None), "fill_value", None)
    fill = getattr(fill, "item", lambda: fill)() if fill is not None else 0
    extra = f" and {more} more" if more > 0 else ""
    return StoreError(
        f"{describe_chunk(key, X.shape, grid, unit)}{extra} of the zarr array {_where(X)} has no stored data, so zarr would "
        f"read it as the fill value {fill!r}; if that block really is all {fill!r}, write it explicitly (zarr skips chunks equal to "
        "the fill value unless write_empty_chunks=True) or set the array's attribute wideml = {'missing_chunks': 'fill'}, "
        "otherwise restore the array from a copy."
    )


def _local_layout(X: Any):
    """The chunk-file layout of a zarr array on a local folder, or None (not local, or a layout wideml does not list)."""
    from wideml.runtime.cluster_check import zarr_location
    from wideml.storage.integrity import chunk_layout

    location = zarr_location(X)
    if location is None:
        return None
    array_dir = os.path.join(os.path.abspath(location[0]), location[1] or "")
    for name in ("zarr.json", ".zarray"):
        try:
            with open(os.path.join(array_dir, name)) as f:
                return chunk_layout(array_dir, json.load(f))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
    return None


def _listed_keys(X: Any) -> set[str]:
    """The store keys under the array's path (one listing through zarr); refuses a store that cannot list."""
    from zarr.core.sync import sync

    store = X.store_path.store
    if not getattr(store, "supports_listing", False):
        raise StoreError(f"the zarr array {_where(X)} is on a store that cannot list its chunks, so a missing "
                         "chunk could not be told from stored data; copy it to a local folder or pass a numpy array.")
    prefix = X.store_path.path.rstrip("/") + "/" if X.store_path.path else ""

    async def listing():
        return [key async for key in store.list_prefix(prefix)]

    return {key[len(prefix):] for key in sync(listing())}


def check_zarr_chunks(X: Any) -> None:
    """Raise StoreError naming the first chunk of the zarr array ``X`` that has no stored data (see the module docstring).

    Parameters
    ----------
    X : zarr.Array
        An array handed to the API (after :func:`~wideml.passes.external_arrays.absolute_zarr`).

    Raises
    ------
    StoreError
        A chunk (or shard, or a sharded array's inner chunk) is absent and the
        array does not declare that absent chunks mean the fill value, or the
        store cannot list its keys.
    """
    if not all(int(n) for n in X.shape) or declares_fill(X):
        return
    from wideml.storage.integrity import _empty_inner_chunk, expected_chunk_keys, missing_chunk_keys

    layout = _local_layout(X)
    if layout is not None:
        missing = missing_chunk_keys(layout)
        if missing:
            raise _missing_error(X, missing[0], layout.grid, len(missing) - 1, layout.unit)
        if layout.inner is not None:
            for key in sorted(expected_chunk_keys(layout.shape, layout.grid)):
                inner = _empty_inner_chunk(layout, key)
                if inner is not None:
                    raise _missing_error(X, inner, layout.inner, 0)
        return
    grid = tuple(int(c) for c in (getattr(X, "shards", None) or X.chunks))
    present = _listed_keys(X)
    counts = [-(-int(n) // g) for n, g in zip(X.shape, grid)]
    missing = [key for key in itertools.product(*(range(k) for k in counts)) if X.metadata.encode_chunk_key(key) not in present]
    if missing:
        raise _missing_error(X, missing[0], grid, len(missing) - 1, "shard" if getattr(X, "shards", None) else "chunk")


__all__ = ["check_zarr_chunks", "declares_fill"]
