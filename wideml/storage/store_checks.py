"""Checks of a feature store's metadata, run by :func:`~wideml.storage.featurestore.open_store` before any pass.

Each check reads metadata only (attributes, array headers, one listing of an
array's chunk files) and turns what is wrong into one :class:`StoreError`
sentence naming the store and the fix: a zarr v2 or unreadable group, a store
of another schema or a newer version, a store its writer never marked
complete, an X that is not a non-empty numeric 2-D array, a missing chunk, a
``feature_shape`` that does not match the number of features.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from wideml.exceptions import StoreError
from wideml.storage import schema
from wideml.storage.integrity import check_layout_complete, chunk_layout

#: Values of the store attribute ``missing_chunks``: "error" (the default: a missing chunk of X is an
#: error naming it) or "fill" (the store says missing chunks mean the fill value, as zarr reads them).
MISSING_CHUNKS = ("error", "fill")


def read_zarr_attrs(path: Path) -> tuple[Any, dict]:
    """The zarr group at ``path`` and its ``wideml`` attributes.

    Raises
    ------
    StoreError
        For a zarr v2 group, a folder that is not a store (no ``zarr.json``), or unreadable metadata.
    """
    import zarr

    meta = path / "zarr.json"
    if not meta.is_file():
        if (path / ".zgroup").is_file():
            raise StoreError(f"{str(path)!r} is a zarr v2 group; wideml reads zarr v3 — convert it with `wideml ingest`.")
        raise StoreError(f"{str(path)!r} is not a feature store (no zarr.json); create one with `wideml ingest` or `wideml simulate`.")
    try:
        json.loads(meta.read_text())
        group = zarr.open_group(str(path), mode="r")
    except Exception as exc:  # corrupt metadata surfaces as many different errors
        raise StoreError(f"{str(path)!r} has unreadable zarr metadata ({type(exc).__name__}); the store is corrupt — recreate it.") from None
    return group, dict(group.attrs.get(schema.ATTRS_KEY, {}))


def zarr_call(path: Path, fn: Callable[[], Any]) -> Any:
    """Run a zarr metadata/array read, turning the many errors of a corrupt store into one StoreError."""
    try:
        return fn()
    except StoreError:
        raise
    except Exception as exc:  # corrupt array metadata or chunks surface as many different errors
        raise StoreError(f"{str(path)!r} has unreadable zarr arrays ({type(exc).__name__}); the store is corrupt — recreate it.") from None


def check_attrs(path: Path, attrs: dict) -> None:
    """Refuse a store of another schema, of a newer schema version, or one that is unfinished (:func:`check_marks`)."""
    if attrs and attrs.get("schema") not in (None, schema.FEATURE_STORE_SCHEMA):
        kind = attrs.get("schema")
        raise StoreError(f"{str(path)!r} is a {kind!r}, not a feature store; pass a store made by `wideml ingest` or `wideml simulate`.")
    if attrs.get("version", 1) > schema.FEATURE_STORE_VERSION:
        raise StoreError(
            f"{str(path)!r} uses feature-store schema version {attrs['version']}, newer than this wideml "
            f"understands ({schema.FEATURE_STORE_VERSION}); upgrade wideml."
        )
    check_marks(path, attrs)


def check_x_meta(path: Path, shape: tuple[int, ...], dtype: Any) -> tuple[int, int]:
    """Refuse an X that is not 2-D, not numeric (or boolean) or empty; returns (n_samples, n_features)."""
    if len(shape) != 2:
        raise StoreError(
            f"X in {str(path)!r} has {len(shape)} dimension(s) (shape {tuple(shape)}); a store holds a 2-D "
            "(n_samples, n_features) array — flatten each sample and keep its shape in feature_shape."
        )
    if not (np.issubdtype(np.dtype(dtype), np.number) or np.dtype(dtype) == bool):
        raise StoreError(f"X in {str(path)!r} has dtype {dtype}, which is not numeric; store floats or integers.")
    n, p = int(shape[0]), int(shape[1])
    if n < 1 or p < 1:
        raise StoreError(f"X in {str(path)!r} is empty (shape {tuple(shape)}); ingest at least one sample and one feature.")
    return n, p


def check_marks(path: Path, attrs: dict) -> None:
    """Refuse a store wideml did not finish writing, or one whose ``missing_chunks`` attribute is unknown."""
    if attrs.get("missing_chunks", "error") not in MISSING_CHUNKS:
        raise StoreError(
            f"the store at {path} has missing_chunks = {attrs['missing_chunks']!r} in its wideml attributes; "
            "set it to 'fill' (missing chunks of X mean the fill value) or 'error', or remove it."
        )
    unfinished = attrs.get("complete") is False or (attrs.get("version", 1) >= 2 and attrs.get("complete") is not True)
    if unfinished:
        raise StoreError(
            f"the store at {path} is not marked complete (its writer was interrupted, or it was copied before it was "
            "finished), so some of X may never have been written; write the store again."
        )


def check_zarr_chunks(path: Path, name: str = schema.X_NAME) -> None:
    """One listing of an array's chunk files against its chunk grid (and, if sharded, each shard's index)."""
    meta_path = path / name / "zarr.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        raise StoreError(f"{str(path)!r} has unreadable metadata for {name}; the store is corrupt — recreate it.") from None
    layout = chunk_layout(path / name, meta)
    if layout is not None:
        check_layout_complete(layout, f"{name} of the store at {path}")


def checked_feature_shape(path: Path, value: Any, n_features: int) -> tuple[int, ...] | None:
    """The store's ``feature_shape`` attribute, checked: positive integers whose product is the number of features."""
    if value is None or value == []:
        return None
    ok = isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    if not ok:
        raise StoreError(f"the store at {path} has feature_shape = {value!r} in its wideml attributes, which is not a list of "
                         "positive integers; fix the attribute (e.g. [91, 109, 91]) or remove it.")
    if int(np.prod(value)) != n_features:
        raise StoreError(f"the store at {path} has feature_shape = {list(value)} ({int(np.prod(value))} values) but X has "
                         f"{n_features} features; fix the attribute or remove it.")
    return tuple(int(v) for v in value)


__all__ = ["MISSING_CHUNKS", "check_attrs", "check_marks", "check_x_meta", "check_zarr_chunks", "checked_feature_shape", "read_zarr_attrs",
           "zarr_call"]
