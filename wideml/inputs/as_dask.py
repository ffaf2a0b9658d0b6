"""Any 2-D input viewed as a dask array chunked only along features (one full-height block per feature chunk)."""

from __future__ import annotations

import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError
from wideml.inputs.external import (
    absolute_zarr,
    cluster_relative_message,
    h5py_as_dask,
    is_relative_zarr,
    relative_zarr_error,
)
from wideml.inputs.numpy_array import check_matrix_meta
from wideml.inputs.zarr_chunks import check_zarr_chunks, zarr_arrays_in_graph
from wideml.inputs.zarr_raw import only_zarr_read, raw_view
from wideml.runtime.scheduler import active_client
from wideml.storage.featurestore import FeatureStore
from wideml.storage.writer import default_feature_chunk


def as_dask_array(X, feature_chunk: int | None = None) -> da.Array:
    """View numpy, dask, zarr or h5py input (or a FeatureStore) as a feature-chunked dask array.

    numpy input gets full-height chunks of about the config ``chunk-size``;
    dask input keeps its chunks; zarr / h5py arrays are chunked like their
    storage (whole stored chunks per dask chunk). A zarr array on local disk
    whose chunk files the raw reader understands, a dask array that is only
    the read of one (``da.from_zarr``), and an uncompressed h5py dataset are
    read as a store's X is, straight from their files into each task's buffer
    (:mod:`wideml.inputs.zarr_raw`, :mod:`wideml.inputs.h5py_raw`); other
    layouts keep zarr's or h5py's read. No graph read here carries
    a relative path: a zarr array opened by a relative path is refused, and an
    h5py dataset is read through its file's absolute path off the threaded
    scheduler, only while that path leads to the file the handle has open
    (:mod:`wideml.inputs.external`).
    A zarr array must have every chunk stored (:func:`~wideml.inputs.zarr_chunks.check_zarr_chunks`), and so
    must every zarr array a dask array's graph reads from (``da.from_zarr``, ``da.from_array(zarr_array)``);
    one opened by a relative path must lead to an array like it from the current directory. Any input must be 2-D, real and numeric (metadata only).

    Raises
    ------
    WidemlError
        For input that is not 2-D or not real numbers, an in-memory zarr array
        (or HDF5 file) while a dask.distributed client is active, a zarr array
        opened by a relative path that leads to no array like it now, directly or under a dask array, a zarr array
        with a chunk that has no stored data (a StoreError), or an HDF5 file
        replaced since its handle was opened (a StoreError).
    """
    if isinstance(X, FeatureStore):
        return X.X
    if isinstance(X, da.Array):
        check_matrix_meta(X.shape, X.dtype)
        for array in zarr_arrays_in_graph(X):  # one walk of the graph, nothing computed
            error = relative_zarr_error(array)
            if error is not None:
                raise error
            if is_relative_zarr(array) and active_client() is not None:
                raise WidemlError(cluster_relative_message(array))
            check_zarr_chunks(array)
        z = only_zarr_read(X) if feature_chunk is None else None
        if z is not None:
            z = absolute_zarr(z)  # a relative root pinned to where it leads now, as the user's graph reads it now
            widths = X.chunks[1]
            regular = all(w == widths[0] for w in widths[:-1]) and widths[-1] <= widths[0]
            view = raw_view(z, int(widths[0])) if regular else None
            if view is not None:
                return view
        return X
    shape = getattr(X, "shape", None)
    if shape is None or not hasattr(X, "dtype"):
        X = np.asarray(X)
        shape = X.shape
    dtype = np.dtype(X.dtype) if not hasattr(X.dtype, "to_native_dtype") else X.dtype.to_native_dtype()
    check_matrix_meta(shape, dtype)
    stored = getattr(X, "chunks", None)
    if feature_chunk is None:
        if isinstance(stored, tuple) and len(stored) == 2 and all(isinstance(c, int) for c in stored):
            feature_chunk = stored[1]
        else:
            feature_chunk = default_feature_chunk(shape[0], shape[1], max(4, dtype.itemsize))
    if type(X).__module__.startswith("h5py"):
        return h5py_as_dask(X, int(feature_chunk))
    if type(X).__module__.startswith("zarr"):
        X = absolute_zarr(X)
        check_zarr_chunks(X)
        view = raw_view(X, int(feature_chunk))
        if view is not None:
            return view
    return da.from_array(X, chunks=(shape[0], int(feature_chunk)), lock=False, asarray=True)
