"""Open and validate feature stores from metadata alone."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import dask.array as da
import h5py
import numpy as np

from wideml.exceptions import PerformanceWarning, StoreError
from wideml.storage import schema
from wideml.storage.integrity import check_hdf5_complete
from wideml.storage.reader import DIRECT_READERS, HDF5Reader, ZarrReader
from wideml.storage.remote_store import is_store_object, open_remote_group, read_remote_store
from wideml.storage.urls import is_url, local_path_of
from wideml.storage.feature_table import TABLE_ATTR, check_table_record, read_feature_table
from wideml.storage.spatial import MASK_NAME, SPATIAL_ATTR, check_spatial_record, describe_line, read_spatial
from wideml.storage.store_checks import (
    check_attrs,
    check_x_meta,
    check_zarr_chunks,
    checked_feature_shape,
    read_zarr_attrs,
    zarr_call,
)


@dataclass(frozen=True)
class FeatureStore:
    """A handle on an on-disk feature store.

    Attributes
    ----------
    path : Path or str
        Location of the zarr group directory or HDF5 file; for a store on an
        object store, its URL (``s3://bucket/s.zarr``) or the description of
        the zarr Store object it was opened from.
    format : {"zarr", "hdf5"}
    X : dask.array.Array of shape (n_samples, n_features)
        Lazy view of the features; its chunks line up with the stored chunks
        (or whole stored chunks of them). Nothing is read until a pass runs.
    y : ndarray of shape (n_samples,) or None
        Labels (integers or strings), or None for an unlabelled store.
    sample_ids, feature_ids : ndarray or None
    feature_shape : tuple of int or None
        Shape that one sample's features came from (e.g. a brain volume).
    stored_chunks : tuple of int
        The (rows, features) chunk shape on disk.
    attrs : dict
        The store's ``wideml`` metadata.
    codec : str
        How X's chunks are compressed and read (e.g. ``"zstd (level 3); read
        straight from the chunk files"``).
    remote : RemoteLocation or None
        Where a store on an object store is (:mod:`wideml.storage.remote_access`); None for local files.
    reader : RemoteZarrReader or None
        The chunk reader of X for a store on an object store (it carries the storage options, so a copy
        such as ``rechunk`` reads where the metadata was read); None for local files.
    """

    path: Path
    format: str
    X: da.Array
    y: np.ndarray | None
    sample_ids: np.ndarray | None
    feature_ids: np.ndarray | None
    feature_shape: tuple[int, ...] | None
    stored_chunks: tuple[int, int]
    attrs: dict[str, Any] = field(default_factory=dict)
    codec: str = "unknown"
    remote: Any = None
    reader: Any = field(default=None, repr=False, compare=False)

    @property
    def is_local(self) -> bool:
        """Whether the store is a local folder or file (``path`` a Path), not on an object store."""
        return self.remote is None

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def dtype(self) -> np.dtype:
        return self.X.dtype

    @property
    def nbytes(self) -> int:
        return int(self.X.nbytes)

    @cached_property
    def spatial(self):
        """The image space of the features (:class:`wideml.storage.spatial.SpatialReference`), or None.

        Read on first use (the ``mask`` array is grid-sized): grid shape,
        affine, header fields and, for a masked store, the boolean mask
        (feature ``j`` is the ``j``-th voxel of the mask in C order).
        """
        if self.attrs.get(SPATIAL_ATTR) is None:
            return None
        where = f"the store at {self.path}"
        if self.format == "hdf5":
            with h5py.File(self.path, "r") as handle:
                return read_spatial(handle, self.attrs, where)
        import zarr

        if self.remote is not None:
            return read_spatial(open_remote_group(self.remote), self.attrs, where)
        return zarr_call(self.path, lambda: read_spatial(zarr.open_group(str(self.path), mode="r"), self.attrs, where))

    @cached_property
    def feature_table(self):
        """Per-feature columns of a non-grid space (:class:`wideml.storage.feature_table.FeatureTable`), or None.

        Read and checked on first use: variants' chromosome, position and
        alleles (PLINK, VCF Zarr), grayordinates' structures and vertices
        (CIFTI, GIFTI).
        """
        if self.attrs.get(TABLE_ATTR) is None:
            return None
        where = f"the store at {self.path}"
        if self.format == "hdf5":
            with h5py.File(self.path, "r") as handle:
                return read_feature_table(handle, self.attrs, self.n_features, where)
        import zarr

        if self.remote is not None:
            return read_feature_table(open_remote_group(self.remote), self.attrs, self.n_features, where)
        return zarr_call(self.path, lambda: read_feature_table(zarr.open_group(str(self.path), mode="r"), self.attrs, self.n_features, where))

    def class_counts(self) -> dict[Any, int]:
        """Number of samples per label, in sorted label order (empty if unlabelled)."""
        if self.y is None:
            return {}
        labels, counts = np.unique(self.y, return_counts=True)
        return {lab.item() if hasattr(lab, "item") else lab: int(c) for lab, c in zip(labels, counts)}

    def summary(self) -> dict[str, Any]:
        """A JSON-serialisable description (what ``wideml info`` prints)."""
        return {
            "path": str(self.path),
            "format": self.format,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "dtype": str(self.dtype),
            "stored_chunks": list(self.stored_chunks),
            "n_chunks": int(np.prod(self.X.numblocks)),
            "size_bytes": self.nbytes,
            "codec": self.codec,
            "class_counts": {str(k): v for k, v in self.class_counts().items()},
            "feature_shape": list(self.feature_shape) if self.feature_shape else None,
            "spatial": self.spatial.describe() if self.spatial is not None else None,
            "feature_table": self.feature_table.describe() if self.feature_table is not None else None,
            "has_sample_ids": self.sample_ids is not None,
            "has_feature_ids": self.feature_ids is not None,
            "source": self.attrs.get("source"),
            "missing_chunks": self.missing_chunks,
            "checksum": self.checksum,
        }

    @property
    def missing_chunks(self) -> str:
        """``"fill"`` when the store says missing chunks of X mean the fill value, else ``"error"``."""
        return "fill" if self.attrs.get("missing_chunks") == "fill" else "error"

    @property
    def checksum(self) -> str | None:
        """The checksum verified on every read of X (``"crc32c"`` or HDF5's ``"fletcher32"``), or None."""
        if "crc32c" in self.codec:
            return "crc32c"
        if "fletcher32" in self.codec:
            return "fletcher32"
        return None


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return str(n)


def format_summary(info: dict[str, Any]) -> str:
    """Human-readable multi-line form of :meth:`FeatureStore.summary`."""
    lines = [
        f"store       {info['path']} ({info['format']})",
        f"shape       {info['n_samples']} samples x {info['n_features']} features",
        f"dtype       {info['dtype']}",
        f"chunks      {info['stored_chunks'][0]} x {info['stored_chunks'][1]} ({info['n_chunks']} chunks)",
        f"size        {_human(info['size_bytes'])}",
        f"codec       {info.get('codec', 'unknown')}",
    ]
    if info["class_counts"]:
        counts = ", ".join(f"{k}: {v}" for k, v in info["class_counts"].items())
        lines.append(f"classes     {len(info['class_counts'])} ({counts})")
    else:
        lines.append("classes     unlabelled")
    if info["feature_shape"]:
        lines.append(f"feature     shape {tuple(info['feature_shape'])}")
    if info.get("spatial"):
        lines.append(f"space       {describe_line(info['spatial'])}")
    if info.get("feature_table"):
        table = info["feature_table"]
        lines.append(f"features    {table['kind']} table: {', '.join(table['columns'])} for {table['n_features']} features")
    if "missing_chunks" in info:
        present = ("missing chunks of X read as the fill value (the store says so: missing_chunks = 'fill')"
                   if info["missing_chunks"] == "fill" else "every chunk of X present")
        check = f"; {info['checksum']} checksums verified on read" if info.get("checksum") else "; no checksums"
        lines.append(f"integrity   {present}{check}")
    return "\n".join(lines)


def open_store(path: Any, storage_options: dict | None = None) -> FeatureStore:
    """Open a feature store and validate it from its metadata (no pass over X).

    Parameters
    ----------
    path : str, path-like, URL or zarr Store
        A zarr v3 group directory or an HDF5 file (``.h5``/``.hdf5``) holding
        ``X`` (n_samples, n_features) and optionally ``y``, ``sample_ids``,
        ``feature_ids``; or a zarr v3 store on an object store, by URL
        (``s3://bucket/s.zarr``, ``gs://...``, ``file:///abs/path``, any
        fsspec protocol) or as a zarr Store object (``FsspecStore``,
        ``ObjectStore``, ``LocalStore``, any ``zarr.abc.store.Store``). A URL
        is never joined to the working folder.
    storage_options : dict, optional
        fsspec options for a URL (e.g. ``{"endpoint_url": "http://..."}``),
        over the config's ``storage-options``. Credentials are refused here:
        they come from the environment or the provider's chain
        (:mod:`wideml.storage.urls`), so no secret enters a task graph.

    Returns
    -------
    FeatureStore

    Raises
    ------
    StoreError
        If the path is missing, is not a store, or X / y have the wrong shape or
        dtype; if the store was never marked complete by its writer (schema
        version 2: ``"complete": true`` is written last); or if a chunk of X is
        missing (one listing of X's chunk files, or HDF5's count of allocated
        chunks; see :mod:`wideml.storage.integrity`), unless the store's wideml
        attributes say ``"missing_chunks": "fill"``. For a URL, also when its
        backend is not installed (naming the extra: ``pip install
        'wideml[s3]'``), the credentials are refused, the endpoint cannot be
        reached, or it names an HDF5 file (not read over URLs yet).

    Warns
    -----
    PerformanceWarning
        If X is chunked along samples, so every pass must stitch feature stripes together.

    Notes
    -----
    The path is made absolute (symlinks resolved) here, so the store and every
    graph built on it keep working after a change of directory and on workers
    started elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> import wideml
    >>> X = np.arange(24, dtype=np.float32).reshape(4, 6)
    >>> path = wideml.write_store("open_example.zarr", X, ["a", "a", "b", "b"], feature_chunk=3)
    >>> store = wideml.open_store(path)              # metadata and one listing of the chunk files: no pass over X
    >>> store.n_samples, store.n_features, str(store.dtype)
    (4, 6, 'float32')
    >>> store.class_counts()
    {'a': 2, 'b': 2}
    >>> np.array_equal(store.X.compute(), X)         # X is a lazy dask array over the chunks
    True
    """
    if is_url(path):
        local = local_path_of(path)
        if local is None:
            return _open_remote(path, storage_options)
        path = local
    elif is_store_object(path):
        if type(path).__name__ != "LocalStore":
            return _open_remote(path, storage_options)
        path = path.root  # a LocalStore: its folder, read as any local store
    elif not isinstance(path, (str, os.PathLike)):
        raise StoreError(f"open_store takes a path, a URL (s3://...) or a zarr Store, not a {type(path).__name__}; "
                         "pass where the store is.")
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise StoreError(f"no feature store at {str(path)!r}; check the path, or create one with `wideml ingest` or `wideml simulate`.")
    fmt = "hdf5" if path.is_file() else "zarr"
    if fmt == "zarr":
        group, attrs = read_zarr_attrs(path)
        with warnings.catch_warnings():  # an array folder without its zarr.json: the sentence below says so, not zarr's warning
            warnings.filterwarnings("ignore", message="Object at .* is not recognized as a component of a Zarr hierarchy")
            keys = zarr_call(path, lambda: set(group.array_keys()))
        get = lambda name: zarr_call(path, lambda: group[name])  # noqa: E731
    else:
        try:
            handle = h5py.File(path, "r")
        except OSError:
            raise StoreError(f"{str(path)!r} is not a feature store (not a zarr directory or an HDF5 file); check the path.") from None
        with handle:
            attrs = json.loads(handle.attrs.get(schema.ATTRS_KEY, "{}"))
            keys = {k for k in handle.keys() if isinstance(handle[k], h5py.Dataset)}
            arrays = {k: handle[k] for k in keys}
            meta = {k: (a.shape, a.dtype, a.chunks or a.shape) for k, a in arrays.items()}
            small = {k: arrays[k][()] for k in keys if k not in (schema.X_NAME, MASK_NAME)}  # the mask is read lazily
            for name, dataset in arrays.items():  # labels and ids are never filled: a missing chunk there is an error
                if name != schema.X_NAME or attrs.get("missing_chunks") != "fill":
                    check_hdf5_complete(dataset, f"{name} of the store at {path}")
        get = None
    if schema.X_NAME not in keys:
        raise StoreError(f"{str(path)!r} is not a feature store (it has no array 'X'); create one with `wideml ingest` or `wideml simulate`.")
    check_attrs(path, attrs)
    fill = attrs.get("missing_chunks") == "fill"

    if fmt == "zarr":
        xa = get(schema.X_NAME)
        shape, dtype, chunks = xa.shape, xa.dtype, xa.chunks
        smalls = {k: zarr_call(path, lambda k=k: np.asarray(get(k)[...])) for k in keys if k not in (schema.X_NAME, MASK_NAME)}
    else:
        shape, dtype, chunks = meta[schema.X_NAME]
        smalls = small
    dtype = np.dtype(dtype) if not hasattr(dtype, "to_native_dtype") else dtype
    n, p = check_x_meta(path, shape, dtype)

    y, ids = _labels_and_ids(path, smalls, n, p)

    chunks = (int(chunks[0]), int(chunks[1]))
    if fmt == "zarr":
        reader = ZarrReader(str(path), schema.X_NAME, (n, p), np.dtype(dtype), chunks, missing="fill" if fill else "error")
        for name in sorted(keys):  # labels and ids are never filled: a missing chunk there is an error
            if name != schema.X_NAME or not fill:
                check_zarr_chunks(path, name)
    else:
        reader = HDF5Reader(str(path), schema.X_NAME, (n, p), np.dtype(dtype), chunks)
    X = da.from_array(reader, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0), dtype=np.dtype(dtype)),
                      name=f"wideml-X-{path.resolve()}-{_mtime_token(path)}")
    if chunks[0] >= n:
        DIRECT_READERS[X.name] = reader
    if chunks[0] < n:
        warnings.warn(
            f"X in {str(path)!r} is chunked along samples ({chunks[0]} of {n} rows per chunk), so every pass stitches "
            f"{-(-n // chunks[0])} chunks into each feature stripe; for faster passes run "
            f"`wideml rechunk {path} OUT` to store full-height feature chunks.",
            PerformanceWarning,
            stacklevel=2,
        )
    feature_shape = checked_feature_shape(path, attrs.get("feature_shape"), p)
    check_spatial_record(attrs, keys, p, f"the store at {path}")
    check_table_record(attrs, p, f"the store at {path}")
    return FeatureStore(
        path=path,
        format=fmt,
        X=X,
        y=y,
        sample_ids=ids[schema.SAMPLE_IDS_NAME],
        feature_ids=ids[schema.FEATURE_IDS_NAME],
        feature_shape=feature_shape,
        stored_chunks=chunks,
        attrs=attrs,
        codec=reader.describe_codec(),
    )


def _labels_and_ids(path, smalls: dict, n: int, p: int) -> tuple[np.ndarray | None, dict]:
    """y and the sample / feature ids of a store, each checked against X's shape."""
    y = smalls.get(schema.Y_NAME)
    if y is not None:
        y = _labels_array(y)
        if y.shape != (n,):
            raise StoreError(
                f"y in {str(path)!r} has shape {y.shape} but X has {n} samples; give exactly one label per sample."
            )
    ids = {}
    for name, length in ((schema.SAMPLE_IDS_NAME, n), (schema.FEATURE_IDS_NAME, p)):
        arr = smalls.get(name)
        if arr is not None:
            arr = _labels_array(arr)
            if arr.shape != (length,):
                raise StoreError(f"{name} in {str(path)!r} has shape {arr.shape}, expected ({length},); rewrite the ids.")
        ids[name] = arr
    return y, ids


def _open_remote(source: Any, storage_options: dict | None) -> FeatureStore:
    """:func:`open_store` for a URL or a zarr Store object (:mod:`wideml.storage.remote_store`)."""
    meta = read_remote_store(source, storage_options)
    url = meta.location.url
    n, p = int(meta.shape[0]), int(meta.shape[1])
    y, ids = _labels_and_ids(url, meta.smalls, n, p)
    chunks = (int(meta.chunks[0]), int(meta.chunks[1]))
    X = da.from_array(meta.reader, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0), dtype=meta.dtype),
                      name=f"wideml-X-{url}-{meta.token}")
    if chunks[0] >= n:
        DIRECT_READERS[X.name] = meta.reader
    else:
        warnings.warn(
            f"X in {url!r} is chunked along samples ({chunks[0]} of {n} rows per chunk), so every pass stitches "
            f"{-(-n // chunks[0])} chunks into each feature stripe; for faster passes rechunk a local copy "
            "(`wideml rechunk`) to full-height feature chunks.",
            PerformanceWarning,
            stacklevel=3,
        )
    feature_shape = checked_feature_shape(url, meta.attrs.get("feature_shape"), p)
    check_spatial_record(meta.attrs, meta.keys, p, f"the store at {url}")
    check_table_record(meta.attrs, p, f"the store at {url}")
    return FeatureStore(path=url, format="zarr", X=X, y=y, sample_ids=ids[schema.SAMPLE_IDS_NAME],
                        feature_ids=ids[schema.FEATURE_IDS_NAME], feature_shape=feature_shape, stored_chunks=chunks,
                        attrs=meta.attrs, codec=meta.reader.describe_codec(), remote=meta.location,
                        reader=meta.reader)


def _mtime_token(path: Path) -> str:
    target = path / schema.X_NAME / "zarr.json" if path.is_dir() else path
    try:
        return str(os.stat(target).st_mtime_ns)
    except OSError:
        return "0"


def _labels_array(values) -> np.ndarray:
    """Labels as int64 (integers), bool, float or str (anything else), 1-D."""
    arr = np.asarray(values)
    if arr.dtype.kind in "OSUT":
        arr = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in arr.ravel()], dtype=str).reshape(arr.shape)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    return arr
