"""Any 2-D input viewed as a dask array chunked only along features (one full-height block per feature chunk)."""

from __future__ import annotations

import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError
from wideml.inputs.external import absolute_zarr, h5py_as_dask
from wideml.inputs.zarr_chunks import check_dask_zarr_chunks, check_zarr_chunks
from wideml.inputs.zarr_raw import only_zarr_read, opened_absolute, raw_view
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
    layouts keep zarr's or h5py's read. No graph built here carries
    a relative path: a zarr array opened relatively is re-opened through its
    absolute path, and an h5py dataset is read through its file's absolute
    path off the threaded scheduler (:mod:`wideml.inputs.external`).
    A zarr array must have every chunk stored (:func:`~wideml.inputs.zarr_chunks.check_zarr_chunks`), and so
    must every zarr array a dask array's graph reads from (``da.from_zarr``, ``da.from_array(zarr_array)``).

    Raises
    ------
    WidemlError
        For an in-memory zarr array (or HDF5 file) while a dask.distributed
        client is active, a zarr array opened relatively from a directory
        that is no longer the working directory, or a zarr array with a chunk
        that has no stored data, directly or under a dask array (a StoreError).
    """
    if isinstance(X, FeatureStore):
        return X.X
    if isinstance(X, da.Array):
        check_dask_zarr_chunks(X)
        z = only_zarr_read(X) if feature_chunk is None else None
        if z is not None:
            widths = X.chunks[1]
            regular = all(w == widths[0] for w in widths[:-1]) and widths[-1] <= widths[0]
            # only an array opened by absolute path: a relative one stays the user's graph (refused on a cluster)
            view = raw_view(z, int(widths[0])) if regular and opened_absolute(z) else None
            if view is not None:
                return view
        return X
    shape = getattr(X, "shape", None)
    if shape is None or not hasattr(X, "dtype"):
        X = np.asarray(X)
        shape = X.shape
    if len(shape) != 2:
        raise WidemlError(f"X must be 2-D (n_samples, n_features), got {len(shape)}-D shape {tuple(shape)}; reshape it.")
    dtype = np.dtype(X.dtype) if not hasattr(X.dtype, "to_native_dtype") else X.dtype.to_native_dtype()
    if not (np.issubdtype(dtype, np.number) or dtype == bool):
        raise WidemlError(f"X has dtype {dtype}, which is not numeric; give floats or integers.")
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
