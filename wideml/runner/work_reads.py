"""Reads of work-folder arrays that fail loudly once their folder is gone.

A fitted p-sized array kept in a work folder (``wideml-fit-*``) is read
through zarr, which reads a chunk whose file is missing as the fill value.
Inside the fitting process the folder lives as long as anything reads from
it (:class:`wideml.runner.workdir.WorkFolder`), but a graph pickled to
another process carries only the folder's path: once the fitting process has
exited, the folder is gone and every read would silently be zeros. So each
block read from a work-folder array is followed by a look for the chunk files
it covers (a stat per chunk, no read), and a missing one raises
:class:`WorkFolderGone` (the whole folder gone) or a :class:`StoreError` (one
chunk file gone). Work-folder arrays are written chunk file by chunk file
(:func:`wideml.storage.rawchunks.write_aligned`), so after a fit every chunk
file exists.
"""

from __future__ import annotations

import itertools
import json
import os

import dask.array as da
import numpy as np

from wideml.exceptions import StoreError
from wideml.runtime.cluster_check import zarr_location
from wideml.storage.integrity import chunk_layout, chunk_path, describe_chunk

#: Name prefix of the graph layer holding a work folder's handle (how pickling finds the arrays read from a work folder).
WORK_LAYER_PREFIX = "wideml-work-folder-"
#: The fix every work-folder error names.
SAVE_FIX = "keep fitted models with wideml.save_model and reopen them with wideml.load_model"


class WorkFolderGone(StoreError):
    """A fitted array was read from a work folder that no longer exists (e.g. a model pickled to another process)."""


def member_name(arr: da.Array, group_path: str) -> str:
    """The name, in the model group ``group_path``, of the stored array that ``arr`` (from ``da.from_array``/``from_zarr``) reads."""
    group = os.path.normpath(group_path)
    for layer_name, layer in arr.dask.layers.items():
        if not str(layer_name).startswith("original-"):
            continue
        for source in layer.values():
            path, name = getattr(source, "path", None), getattr(source, "name", None)
            if isinstance(path, str) and isinstance(name, str) and os.path.normpath(path) == group:  # wideml's ZarrReader
                return name
            location = zarr_location(source) if type(source).__module__.startswith("zarr") else None
            if location is not None:
                full = os.path.normpath(os.path.join(location[0], location[1] or ""))
                if os.path.dirname(full) == group:
                    return os.path.basename(full)
    raise ValueError(f"cannot tell which array of the model group {group_path} this dask array reads; pass its name")


def checked_reads(arr: da.Array, array_dir: str) -> da.Array:
    """``arr`` (the whole zarr array stored at ``array_dir``) with the chunk files of each block looked for after its read.

    Parameters
    ----------
    arr : dask.array.Array
        A read of the whole stored array (any chunking).
    array_dir : str
        The array's folder (holding its ``zarr.json``).

    Returns
    -------
    dask.array.Array
        Same shape, chunks and values; its blocks raise :class:`WorkFolderGone`
        or :class:`StoreError` when a chunk file they cover is missing.
    """
    try:
        with open(os.path.join(array_dir, "zarr.json")) as f:
            layout = chunk_layout(array_dir, json.load(f))
    except (OSError, ValueError):
        layout = None
    if layout is None or layout.inner is not None:  # not a layout wideml writes: nothing to look for
        return arr
    return arr.map_blocks(_checked_block, layout=layout, dtype=arr.dtype, meta=arr._meta, name=f"wideml-checked-{arr.name}")


def _checked_block(block: np.ndarray, layout=None, block_info=None) -> np.ndarray:
    """``block``, once every chunk file it was read from is found to exist."""
    if not block_info or 0 not in block_info:
        return block
    spans = block_info[0]["array-location"]
    ranges = [range(a // g, -(-b // g)) for (a, b), g in zip(spans, layout.grid)]
    for key in itertools.product(*ranges):
        if os.path.exists(chunk_path(layout, key)):
            continue
        array_dir = layout.array_dir
        name = os.path.basename(array_dir)
        folder = os.path.dirname(os.path.dirname(array_dir))
        if not os.path.isfile(os.path.join(array_dir, "zarr.json")):
            raise WorkFolderGone(
                f"the fitted array {name!r} was kept in the work folder {folder}, which is gone (a work folder lasts only as "
                f"long as the process that fitted the model, so a model pickled to another process cannot read it); {SAVE_FIX}."
            )
        raise StoreError(
            f"{describe_chunk(key, layout.shape, layout.grid)} of the fitted array {name!r} in the work folder {folder} is "
            f"missing (its chunk file was deleted), so it would read as zeros; fit the model again, and {SAVE_FIX}."
        )
    return block


__all__ = ["SAVE_FIX", "WORK_LAYER_PREFIX", "WorkFolderGone", "checked_reads", "member_name"]
