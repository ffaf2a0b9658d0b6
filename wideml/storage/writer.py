"""Create feature stores and fill them chunk by chunk with bounded memory."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from wideml._version import __version__
from wideml.exceptions import WidemlError
from wideml.runtime.config import config_bool, config_value, parse_bytes
from wideml.storage import schema
from wideml.storage.atomic import atomic_output
from wideml.storage.casts import check_cast_dtypes, checked_cast
from wideml.storage.featurestore import _labels_array
from wideml.storage.labels import normalise_labels
from wideml.storage.feature_table import TABLE_ATTR, write_feature_table
from wideml.storage.spatial import SPATIAL_ATTR, write_spatial
from wideml.storage.remote_write import is_remote


def default_feature_chunk(n_samples: int, n_features: int, itemsize: int, target_bytes: int | None = None) -> int:
    """Features per chunk so a full-height chunk holds about ``target_bytes`` (config ``chunk-size``)."""
    if target_bytes is None:
        target_bytes = parse_bytes(config_value("chunk-size"), "chunk-size")
    return int(max(1, min(n_features, target_bytes // max(1, n_samples * itemsize))))


def _compressor_for(name: str | None):
    name = (name or config_value("compressor") or "none").lower()
    if name == "none":
        return None
    if name in ("zstd", "lz4"):
        from zarr.codecs import BloscCodec, ZstdCodec

        return ZstdCodec(level=3) if name == "zstd" else BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle")
    raise WidemlError(f"unknown compressor {name!r}; use none, zstd or lz4.")


def checksum_enabled(checksum: bool | None = None) -> bool:
    """``checksum``, or config ``wideml.checksum`` when None (true/false, yes/no, on/off, 1/0)."""
    if checksum is not None:
        return bool(checksum)
    return config_bool("checksum")


def open_x_for_write(array_path: str):
    """Open a zarr array to write into, writing every chunk (also all-zero ones: a chunk file per chunk, always).

    zarr skips chunks equal to the fill value by default, which would leave
    holes that read back as zeros but look like missing chunks; wideml stores
    record that every chunk of X exists (:mod:`wideml.storage.integrity`).
    """
    import zarr

    return zarr.open_array(array_path, mode="r+").with_config({"write_empty_chunks": True})


def check_labels(y, n_samples: int, *, min_classes: int = 2, what: str = "labels") -> np.ndarray:
    """Validate a label vector: one per sample, no missing values, at least ``min_classes`` classes.

    Labels of any kind (ints, bools, strings, numpy ``StringDType``, pandas
    categoricals) come back as int64, bool, float64 or ``<U`` str
    (:func:`wideml.storage.labels.normalise_labels`), so they round-trip
    through fit, save, load and predict unchanged.
    """
    y = normalise_labels(y, what)
    if y.ndim != 1:
        raise WidemlError(f"{what} must be 1-D (one label per sample), got shape {y.shape}; flatten them.")
    if y.shape[0] != n_samples:
        raise WidemlError(f"{what} have {y.shape[0]} entries but X has {n_samples} samples; give exactly one label per sample.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise WidemlError(f"{what} contain NaN or inf; give every sample a label.")
    if y.dtype.kind == "U" and np.any(y == ""):
        raise WidemlError(f"{what} contain empty strings; give every sample a label.")
    classes = np.unique(y)
    if len(classes) < min_classes:
        raise WidemlError(
            f"{what} have only {len(classes)} class ({classes[0].item()!r}); supervised methods need at least {min_classes} classes."
        )
    return y


class StoreWriter:
    """Writes X of a new store one block at a time; use :func:`create_store` to get one.

    Used as a context manager: on normal exit the store is moved into place,
    on an exception the partial output is deleted.
    """

    def __init__(self, path: Path, fmt: str, tmp: Path, handle, x_array, shape, chunks, ctx, attrs=None,
                 allow_lossy_cast: bool = False):
        self.path, self.format, self._tmp = path, fmt, tmp
        self._handle, self._x = handle, x_array
        self.shape, self.chunks = shape, chunks
        self._ctx = ctx
        self._attrs = dict(attrs or {})
        self.allow_lossy_cast = allow_lossy_cast

    def write(self, block, feature_start: int, sample_start: int = 0) -> None:
        """Write ``block`` (rows x features) at ``X[sample_start:, feature_start:]``.

        A block of another dtype is cast to the store's, refusing a cast that
        would change values (:func:`wideml.storage.casts.checked_cast`)
        unless the writer was created with ``allow_lossy_cast=True``.
        """
        block = checked_cast(block, self._x.dtype, source="X", allow_lossy=self.allow_lossy_cast,
                             row0=sample_start, col0=feature_start)
        r1, c1 = sample_start + block.shape[0], feature_start + block.shape[1]
        self._x[sample_start:r1, feature_start:c1] = block

    def x_target(self):
        """Where parallel copy tasks write X: the zarr array's path (usable from any process), or the h5py dataset (local only)."""
        if self.format == "zarr":
            return str(Path(self._tmp) / schema.X_NAME)
        return self._x

    def close(self) -> None:
        """Mark the store complete (its last write, after every chunk) and move it into place."""
        attrs = {**self._attrs, "complete": True}
        if self.format == "hdf5":
            self._handle.attrs[schema.ATTRS_KEY] = json.dumps(attrs)
            self._handle.close()
        else:
            self._handle.attrs[schema.ATTRS_KEY] = attrs
        self._ctx.__exit__(None, None, None)

    def abort(self, exc: BaseException) -> None:
        if self.format == "hdf5":
            try:
                self._handle.close()
            except Exception:  # noqa: BLE001 - the file is deleted next anyway
                pass
        self._ctx.__exit__(type(exc), exc, exc.__traceback__)

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            self.close()
        else:
            self.abort(exc)
        return False


def create_store(
    path: str | os.PathLike,
    *,
    n_samples: int,
    n_features: int,
    y=None,
    dtype: Any = "float32",
    feature_chunk: int | None = None,
    sample_chunk: int | None = None,
    sample_ids=None,
    feature_ids=None,
    feature_shape: tuple[int, ...] | None = None,
    spatial=None,
    feature_table=None,
    source: str | None = None,
    compressor: str | None = None,
    checksum: bool | None = None,
    missing_chunks_are_fill: bool = False,
    allow_lossy_cast: bool = False,
    overwrite: bool = False,
    min_classes: int = 2,
) -> StoreWriter:
    """Create an empty feature store and return a writer for its X.

    Parameters
    ----------
    path : path-like
        Output path; ``.h5``/``.hdf5`` makes an HDF5 file, anything else a zarr v3 group.
    n_samples, n_features : int
        Shape of X.
    y : array-like of shape (n_samples,), optional
        Labels; checked to have at least ``min_classes`` classes.
    dtype : dtype, default "float32"
        Stored dtype of X (floats or integers).
    feature_chunk : int, optional
        Features per chunk; default from config ``chunk-size`` (full-height chunks).
    sample_chunk : int, optional
        Rows per chunk; default all samples.
    sample_ids, feature_ids : array-like, optional
    feature_shape : tuple of int, optional
        Per-sample shape whose product is ``n_features``.
    spatial : wideml.storage.spatial.SpatialReference, optional
        The image space of the features (grid, affine, header fields, mask);
        recorded as the ``spatial_reference`` attribute plus a ``mask`` array
        when masked (:func:`wideml.storage.spatial.write_spatial`). Its number
        of features must be ``n_features``.
    feature_table : wideml.storage.feature_table.FeatureTable, optional
        Per-feature columns of a non-grid space (variants' chromosome and
        position, grayordinates' structures), recorded as the
        ``feature_table`` attribute plus a ``feature_table`` group
        (:func:`wideml.storage.feature_table.write_feature_table`). Its number
        of features must be ``n_features``.
    source : str, optional
        Provenance recorded in the attrs.
    compressor : {"none", "zstd", "lz4"}, optional
        Default from config ``compressor``.
    checksum : bool, optional
        Store each chunk of X with a checksum verified on every read: the zarr
        v3 ``crc32c`` codec (after the compressor), HDF5's ``fletcher32``
        filter. Default from config ``checksum``.
    missing_chunks_are_fill : bool, default False
        Record in the store's attributes (``missing_chunks: "fill"``) that a
        chunk of X whose file is missing means the fill value 0. Without it a
        missing chunk is an error naming it. wideml still writes every chunk.
    allow_lossy_cast : bool, default False
        Let :meth:`StoreWriter.write` cast blocks to ``dtype`` even when values
        change (see :mod:`wideml.storage.casts`).
    overwrite : bool, default False
        Replace an existing output.

    Returns
    -------
    StoreWriter
        Use it as a context manager; the store appears at ``path`` only when it closes without error.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> X = np.arange(24, dtype=np.float32).reshape(4, 6)
    >>> with wideml.create_store("create_example.zarr", n_samples=4, n_features=6, y=[0, 0, 1, 1],
    ...                          feature_chunk=3) as writer:
    ...     for start in (0, 3):                     # one block of features at a time
    ...         writer.write(X[:, start:start + 3], feature_start=start)
    >>> store = wideml.open_store("create_example.zarr")   # appears only once the block ends without error
    >>> np.array_equal(store.X.compute(), X)
    True
    """
    dtype = np.dtype(dtype)
    if not (np.issubdtype(dtype, np.number) or dtype == bool):
        raise WidemlError(f"X has dtype {dtype}, which is not numeric; give floats or integers.")
    if n_samples < 1 or n_features < 1:
        raise WidemlError(f"X must have at least one sample and one feature, got shape ({n_samples}, {n_features}).")
    if y is not None:
        y = check_labels(y, n_samples, min_classes=min_classes)
    if feature_shape is not None:
        feature_shape = tuple(int(s) for s in feature_shape)
        if int(np.prod(feature_shape)) != n_features:
            raise WidemlError(f"feature_shape {feature_shape} has {int(np.prod(feature_shape))} elements but X has {n_features} features; fix the shape.")
    if spatial is not None and spatial.n_features != n_features:
        raise WidemlError(f"the spatial reference has {spatial.n_features} features but X has {n_features}; give the mask the data came from.")
    if feature_table is not None and feature_table.n_features != n_features:
        raise WidemlError(f"the feature table has {feature_table.n_features} rows but X has {n_features} features; give one row per feature.")
    fc = int(feature_chunk or default_feature_chunk(n_samples, n_features, dtype.itemsize))
    fc = max(1, min(fc, n_features))
    sc = int(max(1, min(sample_chunk or n_samples, n_samples)))
    fmt = schema.store_format(path)
    attrs = {
        "schema": schema.FEATURE_STORE_SCHEMA,
        "version": schema.FEATURE_STORE_VERSION,
        "feature_shape": list(feature_shape) if feature_shape else None,
        "created_by": f"wideml {__version__}",
        "store_id": uuid.uuid4().hex,  # this store's own: a model that keeps the store's path tells it from another one there
        "source": source,
        "complete": False,  # set to true by StoreWriter.close, after every chunk is written
    }
    if missing_chunks_are_fill:
        attrs["missing_chunks"] = "fill"
    checksum = checksum_enabled(checksum)
    uncompressed = _compressor_for(compressor) is None  # a compressed store's size is not known before writing
    ctx = atomic_output(path, overwrite, needed_bytes=n_samples * n_features * dtype.itemsize if uncompressed else 0)
    tmp = ctx.__enter__()
    try:
        smalls = {}
        if y is not None:
            smalls[schema.Y_NAME] = y
        for name, arr, length in ((schema.SAMPLE_IDS_NAME, sample_ids, n_samples), (schema.FEATURE_IDS_NAME, feature_ids, n_features)):
            if arr is not None:
                arr = _labels_array(arr)
                if arr.shape != (length,):
                    raise WidemlError(f"{name} has {arr.shape[0] if arr.ndim else 0} entries, expected {length}; give one id each.")
                smalls[name] = arr
        if fmt == "zarr":
            import zarr

            group = zarr.create_group(store=str(tmp), zarr_format=3)
            if spatial is not None:
                attrs[SPATIAL_ATTR] = write_spatial(group, spatial)
            if feature_table is not None:
                attrs[TABLE_ATTR] = write_feature_table(group, feature_table)
            group.attrs[schema.ATTRS_KEY] = attrs
            codecs = [c for c in (_compressor_for(compressor),) if c is not None]
            if checksum:
                from zarr.codecs import Crc32cCodec

                codecs.append(Crc32cCodec())
            x = group.create_array(
                schema.X_NAME, shape=(n_samples, n_features), chunks=(sc, fc), dtype=dtype,
                compressors=codecs or None, fill_value=0, config={"write_empty_chunks": True},
                dimension_names=("samples", "features"),
            )
            for name, arr in smalls.items():
                a = group.create_array(name, shape=arr.shape, chunks=arr.shape, dtype=str if arr.dtype.kind == "U" else arr.dtype,
                                       compressors=None, dimension_names=(name.split("_")[0] if "_" in name else "samples",))
                a[:] = arr
            handle = group
        else:
            handle = h5py.File(tmp, "w")
            if spatial is not None:
                attrs[SPATIAL_ATTR] = write_spatial(handle, spatial)
            if feature_table is not None:
                attrs[TABLE_ATTR] = write_feature_table(handle, feature_table)
            handle.attrs[schema.ATTRS_KEY] = json.dumps(attrs)
            comp = None if (compressor or "none") == "none" else "gzip"
            x = handle.create_dataset(schema.X_NAME, shape=(n_samples, n_features), chunks=(sc, fc), dtype=dtype,
                                      compression=comp, fletcher32=checksum)
            for name, arr in smalls.items():
                data = arr.astype(h5py.string_dtype()) if arr.dtype.kind == "U" else arr
                handle.create_dataset(name, data=data)
    except BaseException as exc:
        if fmt == "hdf5" and "handle" in locals():
            handle.close()
        ctx.__exit__(type(exc), exc, exc.__traceback__)
        raise
    return StoreWriter(Path(path), fmt, tmp, handle, x, (n_samples, n_features), (sc, fc), ctx, attrs, allow_lossy_cast)


def write_store(
    path: str | os.PathLike,
    X,
    y=None,
    *,
    feature_chunk: int | None = None,
    sample_chunk: int | None = None,
    dtype: Any = None,
    overwrite: bool = False,
    allow_lossy_cast: bool = False,
    **kwargs,
) -> Path:
    """Write an in-memory, memory-mapped or dask array to a new feature store, one feature stripe at a time.

    Parameters
    ----------
    path : path-like
    X : array-like of shape (n_samples, n_features)
        numpy array, ``numpy.memmap``, dask array, zarr or h5py array. Only one
        stripe of ``feature_chunk`` columns is in memory at a time.
    y : array-like of shape (n_samples,), optional
    feature_chunk, sample_chunk, dtype, overwrite, **kwargs
        As for :func:`create_store` (``checksum``, ``compressor``,
        ``missing_chunks_are_fill``...).
    allow_lossy_cast : bool, default False
        Cast to ``dtype`` even when values change (float to int, out-of-range
        values, float64 to float16); by default such a cast is refused with the
        first offending value (:mod:`wideml.storage.casts`).

    Returns
    -------
    Path

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> X = np.random.default_rng(0).normal(size=(10, 8))
    >>> path = wideml.write_store("write_example.zarr", X, np.repeat([0, 1], 5), feature_chunk=4)
    >>> path.name
    'write_example.zarr'
    >>> store = wideml.open_store(path)
    >>> store.X.chunks                               # full-height chunks of 4 features
    ((10,), (4, 4))
    >>> np.allclose(store.X.compute(), X.astype(np.float32))
    True
    """
    shape = getattr(X, "shape", None)
    if shape is None:
        X = np.asarray(X)
        shape = X.shape
    if len(shape) != 2:
        raise WidemlError(f"X must be 2-D (n_samples, n_features), got {len(shape)}-D shape {tuple(shape)}; reshape it.")
    src_dtype = np.dtype(getattr(X, "dtype", np.float64))
    if not (np.issubdtype(src_dtype, np.number) or src_dtype == bool):
        raise WidemlError(f"X has dtype {src_dtype}, which is not numeric; give floats or integers.")
    dtype = np.dtype(dtype) if dtype is not None else (src_dtype if src_dtype.kind == "f" else np.dtype("float32") if src_dtype.itemsize <= 2 else np.dtype("float64"))
    n, p = int(shape[0]), int(shape[1])
    check_cast_dtypes(src_dtype, dtype, "X", allow_lossy_cast)
    writer = create_store(path, n_samples=n, n_features=p, y=y, dtype=dtype, feature_chunk=feature_chunk,
                          sample_chunk=sample_chunk, overwrite=overwrite, allow_lossy_cast=allow_lossy_cast, **kwargs)
    with writer:
        step = writer.chunks[1]
        for start in range(0, p, step):
            block = X[:, start : start + step]
            if hasattr(block, "compute"):
                block = block.compute()
            writer.write(np.asarray(block), start)
    return path if is_remote(path) else Path(path)
