"""Any 2-D input viewed as a dask array chunked only along features (one full-height block per feature chunk)."""

from __future__ import annotations

import dask.array as da
import numpy as np

from wideml.exceptions import WidemlError


def as_dask_array(X, feature_chunk: int | None = None) -> da.Array:
    """View numpy, dask, zarr or h5py input (or a FeatureStore) as a feature-chunked dask array.

    numpy input gets full-height chunks of about the config ``chunk-size``;
    dask input keeps its chunks; zarr / h5py arrays are chunked like their
    storage (whole stored chunks per dask chunk). No graph built here carries
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
    from wideml.storage.featurestore import FeatureStore

    if isinstance(X, FeatureStore):
        return X.X
    if isinstance(X, da.Array):
        from wideml.inputs.zarr_chunks import check_dask_zarr_chunks

        check_dask_zarr_chunks(X)
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
            from wideml.storage.writer import default_feature_chunk

            feature_chunk = default_feature_chunk(shape[0], shape[1], max(4, dtype.itemsize))
    if type(X).__module__.startswith("h5py"):
        from wideml.inputs.external import h5py_as_dask

        return h5py_as_dask(X, int(feature_chunk))
    if type(X).__module__.startswith("zarr"):
        from wideml.inputs.external import absolute_zarr, check_zarr_chunks

        X = absolute_zarr(X)
        check_zarr_chunks(X)
    return da.from_array(X, chunks=(shape[0], int(feature_chunk)), lock=False, asarray=True)
