"""zarr and h5py arrays handed straight to the API, made safe to read from any process and any directory.

A zarr array opened with a relative path (``zarr.open_array("x.zarr")``) keeps
that relative path: read after a change of directory, or by a dask worker
started elsewhere, its chunks are "missing" and read as the fill value. An
h5py dataset cannot travel to another process at all. So before a graph is
built on one:

* a zarr array on a local directory store is re-opened through the absolute
  path of its root (checked to be the same array: same shape, dtype, chunks);
* an h5py dataset is read, off the threaded scheduler, by a picklable reader
  opened on the absolute path of its file (found from the open file itself,
  so it is right even after a change of directory);
* on a dask.distributed scheduler, a zarr array in this process's memory
  (``MemoryStore``, ``memory://``) or an in-memory HDF5 file is refused: the
  workers cannot read it;
* a zarr array with a chunk that has no stored data is refused
  (:mod:`wideml.inputs.zarr_chunks`): zarr would read it as the fill value.
"""

from __future__ import annotations

import os
from typing import Any

import dask
import dask.array as da
import numpy as np
import zarr
from dask.base import tokenize
from zarr.storage import LocalStore

from wideml.exceptions import WidemlError
from wideml.inputs.h5py_raw import raw_reader
from wideml.inputs.zarr_chunks import check_zarr_chunks
from wideml.runtime.cluster_check import IN_MEMORY_MESSAGE, is_in_memory_zarr, zarr_location
from wideml.runtime.scheduler import active_client
from wideml.storage.reader import DIRECT_READERS, HDF5Reader


def _local_scheduler() -> bool:
    """True on the threaded or synchronous scheduler (tasks run in this process)."""
    if active_client() is not None:
        return False
    return dask.config.get("scheduler", "threads") in ("threads", "threading", "sync", "synchronous", "single-threaded", None)


def absolute_zarr(X: Any) -> Any:
    """``X`` (a zarr array), re-opened through the absolute path of its directory store when that path is relative.

    Parameters
    ----------
    X : zarr.Array

    Returns
    -------
    zarr.Array
        ``X`` itself when its store is already absolute or not a directory store.

    Raises
    ------
    WidemlError
        For an in-memory array while a dask.distributed client is active, or
        a relative store path that no longer leads to this array (the working
        directory changed since it was opened).
    """
    if is_in_memory_zarr(X):
        if active_client() is not None:
            raise WidemlError(IN_MEMORY_MESSAGE + ".")
        return X
    location = zarr_location(X)
    if location is None:
        kind = type(getattr(getattr(X, "store_path", None), "store", None)).__name__
        if active_client() is not None and kind not in ("FsspecStore", "ObjectStore"):
            raise WidemlError(f"a zarr array on a {kind} cannot be read safely by cluster workers; write it to a directory "
                              "store on a shared filesystem or pass a numpy array.")
        return X
    root, member = location
    if os.path.isabs(root):
        return X
    absolute = os.path.abspath(root)
    where = os.path.join(absolute, member) if member else absolute
    fix = (f"the zarr array opened at the relative path {os.path.join(root, member or '')!r} is not at {where} "
           "(the working directory changed since it was opened); open it with an absolute path.")
    if not os.path.isfile(os.path.join(where, "zarr.json")):
        raise WidemlError(fix)
    try:
        again = zarr.open_array(store=LocalStore(absolute, read_only=True), path=member or "", mode="r")
    except Exception:  # noqa: BLE001 - whatever zarr raises, it is not the array we had
        raise WidemlError(fix) from None
    if (again.shape, again.chunks, np.dtype(_native(again.dtype))) != (X.shape, X.chunks, np.dtype(_native(X.dtype))):
        raise WidemlError(fix)
    return again


def _native(dtype: Any) -> Any:
    return dtype.to_native_dtype() if hasattr(dtype, "to_native_dtype") else dtype


def h5py_file_path(X: Any) -> str | None:
    """The absolute path of the file behind an h5py dataset, or None for an in-memory file.

    Read from the open file descriptor where the platform shows it
    (``/proc/self/fd``), so a change of directory since the file was opened
    does not matter; else the file name made absolute.
    """
    f = X.file
    if f.driver == "core" and not f.filename:
        return None
    if f.driver == "core":
        try:
            backing = bool(f.id.get_access_plist().get_fapl_core()[1])
        except Exception:  # noqa: BLE001 - unknown: treat as in memory (never read a stale file)
            backing = False
        if not backing:
            return None
    try:
        fd = f.id.get_vfd_handle()
        path = os.readlink(f"/proc/self/fd/{int(fd)}")
        if os.path.isabs(path) and os.path.exists(path):
            return path
    except (OSError, ValueError, TypeError, NotImplementedError, AttributeError):
        pass
    path = os.path.abspath(f.filename)
    return path if os.path.exists(path) else None


def h5py_as_dask(X: Any, feature_chunk: int) -> da.Array:
    """A dask array over an h5py dataset that any process can read (through its file's absolute path).

    A dataset whose bytes lie in the file as they are in memory is read by
    byte offset (:mod:`wideml.inputs.h5py_raw`), as a store's X is. Otherwise, on the threaded and synchronous schedulers the open dataset is read under
    a lock, as before; elsewhere a picklable reader reopens the file by its
    absolute path in the task's process.
    """
    chunks = (X.shape[0], int(feature_chunk))
    raw = raw_reader(X, h5py_file_path(X))
    if raw is not None:
        name = "wideml-h5raw-" + tokenize(raw.path, raw.name, raw.shape, str(raw.stored), raw.chunks, raw._stamp, chunks)
        Xd = da.from_array(raw, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0), dtype=raw.dtype), name=name)
        DIRECT_READERS[Xd.name] = raw
        return Xd
    if _local_scheduler():
        return da.from_array(X, chunks=chunks, lock=True, asarray=True)
    path = h5py_file_path(X)
    if path is None:
        raise WidemlError(f"the HDF5 dataset {X.name} is in an in-memory file, which other processes and cluster workers "
                          "cannot read; write it to a file on a shared filesystem or pass a numpy array.")
    if X.file.mode != "r":
        X.file.flush()
    dtype = np.dtype(X.dtype)
    reader = HDF5Reader(path, X.name, X.shape, dtype, X.chunks or X.shape)
    st = os.stat(path)
    name = f"wideml-h5-{path}-{X.name}-{st.st_size}-{st.st_mtime_ns}"
    return da.from_array(reader, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0), dtype=dtype), name=name)


__all__ = ["absolute_zarr", "check_zarr_chunks", "h5py_as_dask", "h5py_file_path"]
