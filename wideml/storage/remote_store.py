"""The metadata of a feature store on an object store, read and checked before any pass.

:func:`read_remote_store` does for a URL (``s3://bucket/s.zarr``) or a zarr
Store object what :func:`wideml.storage.featurestore.open_store` does for a
local zarr folder: it reads the group's ``zarr.json`` and wideml attributes,
refuses zarr v2 and HDF5 (one sentence each), reads the small arrays (labels,
ids), lists each array's chunk objects once (one listing of the array's
prefix) and checks them against the chunk grid, and builds the chunk reader
of X (:class:`~wideml.storage.remote_reader.RemoteZarrReader`). Nothing of X
is read.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from wideml.exceptions import StoreError
from wideml.storage import schema
from wideml.storage.integrity import check_layout_complete, chunk_layout
from wideml.storage.remote_access import RemoteLocation, get_bytes, list_keys, remote_error, run
from wideml.storage.remote_reader import RemoteZarrReader
from wideml.storage.spatial import MASK_NAME
from wideml.storage.store_checks import check_attrs, check_x_meta
from wideml.storage.urls import is_url, protocol_of, require_backend, storage_options

_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5")


@dataclass(frozen=True)
class RemoteStoreMeta:
    """What :func:`read_remote_store` found: enough for ``open_store`` to build a FeatureStore."""

    location: RemoteLocation
    attrs: dict
    keys: set
    shape: tuple
    dtype: np.dtype
    chunks: tuple
    smalls: dict
    reader: RemoteZarrReader
    token: str


def is_store_object(obj: Any) -> bool:
    """Whether ``obj`` is a zarr Store (``zarr.abc.store.Store``: FsspecStore, ObjectStore, LocalStore, ...)."""
    if not type(obj).__module__.startswith("zarr") and not any(c.__module__.startswith("zarr.abc") for c in type(obj).__mro__):
        return False
    from zarr.abc.store import Store

    return isinstance(obj, Store)


def remote_location(source: Any, options: dict | None = None) -> RemoteLocation:
    """The :class:`RemoteLocation` of a URL (backend checked, storage options merged and checked) or a Store object."""
    if is_url(source):
        url = source.strip().rstrip("/")
        if url.lower().endswith(_HDF5_SUFFIXES):
            raise StoreError(f"{url} is an HDF5 file on an object store, which wideml does not read yet; copy it locally, or "
                             "ingest it into a zarr store (`wideml ingest`) and put that on the object store.")
        require_backend(url)
        return RemoteLocation(url, storage_options(options, protocol_of(url)))
    if options:
        raise StoreError("storage_options apply to a URL only; give the options to the Store object when you create it.")
    return RemoteLocation(_describe(source), {}, source)


def _describe(store: Any) -> str:
    text = str(store)
    return text if text and "object at 0x" not in text else f"{type(store).__name__} store"


def _json(location: RemoteLocation, key: str) -> dict | None:
    data = get_bytes(location, key)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        raise StoreError(f"{location.url} has unreadable metadata {key} (not JSON); the store is corrupt — recreate it.") from None


def _group_meta(location: RemoteLocation) -> dict:
    meta = _json(location, "zarr.json")
    if meta is None:
        if get_bytes(location, ".zgroup") is not None:
            raise StoreError(f"{location.url!r} is a zarr v2 group; wideml reads zarr v3 — convert it with `wideml ingest` "
                             "(from a local copy).")
        raise StoreError(f"no feature store at {location.url!r} (no zarr.json there); check the URL, or create one with "
                         "`wideml ingest` locally and copy it.")
    if meta.get("node_type") != "group":
        raise StoreError(f"{location.url!r} is a zarr array, not a feature store (a group holding X); pass the store's URL.")
    return meta


def open_remote_group(location: RemoteLocation):
    """The zarr group of a remote store, read-only (for the spatial reference and the feature table)."""
    import zarr

    try:
        return zarr.open_group(store=location.store(), mode="r")
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise remote_error(exc, location.url, "open") from None


def _present(location: RemoteLocation, layout) -> set[tuple[int, ...]]:
    """Chunk (or shard) indices whose objects exist: one listing of the array's chunk prefix."""
    prefix = layout.array_dir + "/" + (layout.prefix + layout.separator if layout.prefix else "")
    found = set()
    for key in list_keys(location, prefix):
        rest = key[len(prefix):]
        parts = rest.split(layout.separator) if rest else []
        if len(parts) == len(layout.shape) and all(p.isdigit() for p in parts):
            found.add(tuple(int(p) for p in parts))
    return found


def _check_complete(location: RemoteLocation, name: str, meta: dict) -> None:
    layout = chunk_layout(name, meta)
    if layout is None:
        return

    def read_index(path: str, size: int, at_end: bool) -> bytes:
        if not at_end:
            data = get_bytes(location, path)
            data = data[:size] if data is not None else None
        else:
            data = get_bytes(location, path, suffix=size)
        if data is None:
            raise OSError(path)
        return data

    check_layout_complete(layout, f"{name} of the store at {location.url}", present=_present(location, layout), read_index=read_index)


def read_remote_store(source: Any, options: dict | None = None) -> RemoteStoreMeta:
    """Read and check a remote store's metadata (no pass over X).

    Parameters
    ----------
    source : str or zarr.abc.store.Store
        A URL (``s3://bucket/s.zarr``, ``gs://...``, any fsspec protocol) or a zarr Store object.
    options : dict, optional
        fsspec storage options for a URL (merged over the config's ``storage-options``; no credentials).

    Returns
    -------
    RemoteStoreMeta
        With the small arrays (labels, ids: every array but X and the mask) read.

    Raises
    ------
    StoreError
        For a missing backend (naming the extra to install), refused credentials, an unreachable endpoint, a
        missing store, zarr v2, HDF5, a store of another schema or not marked complete, an X that is not a
        numeric 2-D array, or a missing chunk of any array (of y and the ids always; of X unless the store
        says ``missing_chunks: fill``).
    """
    location = remote_location(source, options)
    group_meta = _group_meta(location)
    attrs = dict((group_meta.get("attributes") or {}).get(schema.ATTRS_KEY, {}))
    group = open_remote_group(location)
    try:
        with warnings.catch_warnings():  # an array folder without its zarr.json: the sentence below says so, not zarr's warning
            warnings.filterwarnings("ignore", message="Object at .* is not recognized as a component of a Zarr hierarchy")
            keys = set(group.array_keys())
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise remote_error(exc, location.url, "list the arrays of") from None
    if schema.X_NAME not in keys:
        raise StoreError(f"{location.url!r} is not a feature store (it has no array 'X'); create one with `wideml ingest` "
                         "or `wideml simulate` and copy it.")
    check_attrs(location.url, attrs)
    fill = attrs.get("missing_chunks") == "fill"
    metas = {}
    for name in sorted(keys):
        meta = _json(location, f"{name}/zarr.json")
        if meta is None:
            raise StoreError(f"{location.url!r} has no metadata for {name}; the store is corrupt — recreate it.")
        metas[name] = meta
    try:
        xa = group[schema.X_NAME]
        shape, chunks = tuple(int(s) for s in xa.shape), tuple(int(c) for c in xa.chunks)
        dtype = np.dtype(xa.dtype.to_native_dtype() if hasattr(xa.dtype, "to_native_dtype") else xa.dtype)
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise StoreError(f"{location.url!r} has unreadable metadata for X ({type(exc).__name__}); the store is corrupt — recreate it.") from None
    check_x_meta(location.url, shape, dtype)
    for name in sorted(keys):  # labels and ids are never filled: a missing chunk there is an error
        if name != schema.X_NAME or not fill:
            _check_complete(location, name, metas[name])
    smalls = {}
    for name in sorted(keys - {schema.X_NAME, MASK_NAME}):
        try:
            smalls[name] = np.asarray(group[name][...])
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise remote_error(exc, location.url, f"read {name} of") from None
    reader = RemoteZarrReader(location, schema.X_NAME, shape, dtype, chunks, metas[schema.X_NAME], missing="fill" if fill else "error")
    return RemoteStoreMeta(location, attrs, keys, shape, dtype, chunks, smalls, reader, _token(group_meta, metas))


def _token(group_meta: dict, metas: dict) -> str:
    digest = hashlib.sha256(json.dumps(group_meta, sort_keys=True, default=str).encode())
    for name in sorted(metas):
        digest.update(json.dumps(metas[name], sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


__all__ = ["RemoteStoreMeta", "is_store_object", "open_remote_group", "protocol_of", "read_remote_store", "remote_objects_digest",
           "remote_location"]


def remote_objects_digest(url: str) -> str | None:
    """A digest of every object of the store at ``url``: key, size and ETag (or modification time), from one listing.

    What a resumable fit's fingerprint holds for a store on an object store (as a local store's files' names, sizes
    and mtimes): rewriting any object changes it, reading none does. None when the listing's filesystem cannot be
    reached with the configured storage options (the fit then runs without checkpoints).
    """
    try:
        location = remote_location(url)
        store = location.store()
    except StoreError:
        return None
    fs, root = getattr(store, "fs", None), getattr(store, "path", None)
    if fs is None or root is None or not hasattr(fs, "_find"):
        return None
    try:
        found = run(lambda: fs._find(root, detail=True), url, "list")
    except StoreError:
        return None
    digest = hashlib.sha256()
    for key in sorted(found):
        info = found[key]
        stamp = info.get("ETag") or info.get("etag") or info.get("LastModified") or info.get("mtime") or info.get("md5Hash") or ""
        digest.update(f"{key[len(root):]}\0{info.get('size')}\0{stamp}\n".encode())
    return digest.hexdigest()[:24]
