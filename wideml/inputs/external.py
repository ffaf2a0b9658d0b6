"""zarr and h5py arrays handed straight to the API, made safe to read from any process and any directory.

A zarr array opened with a relative path (``zarr.open_array("x.zarr")``) keeps
that relative path: read after a change of directory, or by a dask worker
started elsewhere, it reads whatever that path leads to there (missing chunks
read as the fill value, or another array with the same metadata). An h5py
dataset cannot travel to another process at all. So before a graph is built
on one:

* a zarr array on a local directory store opened by a relative path (v2 or
  v3) is re-opened once, through the absolute path that relative path leads
  to now (what the handle itself reads now), checked to be an array like it
  (same shape, dtype, chunks), and read by that absolute path from then on;
  one read by a dask array handed in must lead to such an array too;
* an h5py dataset is read, off the threaded scheduler, by a picklable reader
  opened on the absolute path of its file (found from the open file itself,
  so it is right even after a change of directory), and only if the file at
  that path is the very file the handle has open (same device and inode):
  a file replaced on disk is refused, never read in place of the handle's;
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

from wideml.exceptions import StoreError, WidemlError
from wideml.inputs.h5py_raw import (
    SameFileHDF5Reader,
    handle_identity,
    raw_reader,
    replaced_error,
    same_file,
)
from wideml.inputs.zarr_chunks import check_zarr_chunks
from wideml.runtime.cluster_check import (
    IN_MEMORY_MESSAGE,
    is_in_memory_zarr,
    zarr_location,
)
from wideml.runtime.scheduler import active_client
from wideml.storage.reader import DIRECT_READERS


def _local_scheduler() -> bool:
    """True on the threaded or synchronous scheduler (tasks run in this process)."""
    if active_client() is not None:
        return False
    return dask.config.get("scheduler", "threads") in ("threads", "threading", "sync", "synchronous", "single-threaded", None)


def _native(dtype: Any) -> Any:
    return dtype.to_native_dtype() if hasattr(dtype, "to_native_dtype") else dtype


def _pinned(X: Any, root: str, member: str | None) -> Any:
    """The array at ``abspath(root)/member`` now, opened read-only by absolute path, or None when there is none like ``X``."""
    absolute = os.path.abspath(root)
    where = os.path.join(absolute, member) if member else absolute
    metadata = "zarr.json" if getattr(X.metadata, "zarr_format", 3) == 3 else ".zarray"
    if not os.path.isfile(os.path.join(where, metadata)):
        return None
    try:
        again = zarr.open_array(store=LocalStore(absolute, read_only=True), path=member or "", mode="r",
                                zarr_format=getattr(X.metadata, "zarr_format", None))
    except Exception:  # noqa: BLE001 - whatever zarr raises, it is not an array like the one handed in
        return None
    if (again.shape, again.chunks, np.dtype(_native(again.dtype))) != (X.shape, X.chunks, np.dtype(_native(X.dtype))):
        return None
    return again


def is_relative_zarr(X: Any) -> bool:
    """Whether ``X`` is a zarr array on local files whose root was given as a relative path."""
    location = zarr_location(X)
    return location is not None and not os.path.isabs(location[0])


def cluster_relative_message(X: Any) -> str:
    """The refusal of a user's dask array over a relatively opened zarr array while a cluster is active."""
    root, member = zarr_location(X)
    given = os.path.join(root, member) if member else root
    return (f"a dask array handed in reads the zarr array opened by the relative path {given!r}, which cluster workers "
            "resolve against their own directories; open it with an absolute path "
            f"(zarr.open_array(os.path.abspath({given!r}), mode='r')) or use da.from_zarr.")


def relative_zarr_error(X: Any) -> WidemlError | None:
    """The refusal of a zarr array opened by a relative path that leads to no array like it now, else None.

    zarr keeps a relative root and resolves it against the working directory at
    every read, so such a handle reads whatever that path leads to *now*:
    wideml reads the same (see :func:`absolute_zarr`). When the path now leads
    to no array of the handle's shape, chunks and dtype (the working directory
    changed, or the array moved), the handle itself would read fill values or
    fail, and the array is refused with the fix.
    """
    location = zarr_location(X)
    if location is None or os.path.isabs(location[0]):
        return None
    root, member = location
    if _pinned(X, root, member) is not None:
        return None
    given = os.path.join(root, member) if member else root
    return WidemlError(f"the zarr array opened by the relative path {given!r} is no longer there from the current directory "
                       f"({os.getcwd()}: the working directory changed since it was opened, or the array moved); open it with "
                       f"an absolute path (zarr.open_array(os.path.abspath({given!r}), mode='r')).")


def absolute_zarr(X: Any) -> Any:
    """``X`` (a zarr array), re-opened by the absolute path its relative path leads to now, so any process reads the same.

    A relative root is resolved once, here, against the current directory: that
    is the array the handle itself reads at this moment (zarr resolves relative
    roots at every read). The whole fit or prediction then reads that array by
    absolute path, even if the working directory changes meanwhile or a task
    runs in another process.

    Parameters
    ----------
    X : zarr.Array

    Returns
    -------
    zarr.Array
        ``X`` itself, or the same array re-opened by absolute path when ``X`` was opened by a relative one.

    Raises
    ------
    WidemlError
        For an in-memory array (or one on a store workers cannot reach) while a
        dask.distributed client is active, or an array opened by a relative path
        that leads to no array like it now (:func:`relative_zarr_error`).
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
    pinned = _pinned(X, root, member)
    if pinned is None:
        raise relative_zarr_error(X)
    return pinned


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

    Every reader that re-opens the file by path reads only the file the
    handle has open (:func:`~wideml.inputs.h5py_raw.same_file`): when another
    file now sits at that path, the threaded and synchronous schedulers read
    through the handle itself (exactly what ``X[...]`` reads), other
    schedulers refuse.

    Raises
    ------
    StoreError
        Off the threaded scheduler, when the file at the path is not the one
        the handle has open, or when the handle's driver hides which file it is.
    """
    chunks = (X.shape[0], int(feature_chunk))
    path = h5py_file_path(X)
    same = same_file(X, path)
    raw = raw_reader(X, path) if same else None
    if raw is not None:
        name = "wideml-h5raw-" + tokenize(raw.path, raw.name, raw.shape, str(raw.stored), raw.chunks, raw._stamp, raw.identity,
                                          chunks)
        Xd = da.from_array(raw, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0), dtype=raw.dtype), name=name)
        DIRECT_READERS[Xd.name] = raw
        return Xd
    if _local_scheduler():
        return da.from_array(X, chunks=chunks, lock=True, asarray=True)
    if path is None:
        raise WidemlError(f"the HDF5 dataset {X.name} is in an in-memory file, which other processes and cluster workers "
                          "cannot read; write it to a file on a shared filesystem or pass a numpy array.")
    if same is False:
        raise replaced_error(path)
    if same is None:
        raise StoreError(f"the HDF5 file {path} was opened with h5py's {X.file.driver!r} driver, which does not show which file "
                         "it holds, so other processes cannot be sure to read the same file; open it with h5py's default "
                         "driver (h5py.File(path, 'r')) or use the threaded scheduler.")
    if X.file.mode != "r":
        X.file.flush()
    dtype = np.dtype(X.dtype)
    identity = handle_identity(X)
    reader = SameFileHDF5Reader(path, X.name, X.shape, dtype, X.chunks or X.shape, identity)
    st = os.stat(path)
    name = f"wideml-h5-{path}-{X.name}-{st.st_size}-{st.st_mtime_ns}-{identity[0]}-{identity[1]}"
    return da.from_array(reader, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0), dtype=dtype), name=name)


__all__ = ["absolute_zarr", "check_zarr_chunks", "cluster_relative_message", "h5py_as_dask", "h5py_file_path", "is_relative_zarr",
           "relative_zarr_error"]
