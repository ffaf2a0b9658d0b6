"""Model stores: the zarr v3 group I/O of fitted models. Never pickle; never code.

A model group holds JSON attrs under ``wideml`` (schema, version, estimator
class name, params, state, package version, provenance, the feature layout
the model was trained on, and its spatial reference / feature ids when the
training store had them: :mod:`wideml.storage.model_space`) and named arrays:
small ones (n- or K-sized) and p-sized ones chunked like X. Writes are atomic, and every chunk is written
(even an all-zero one), so a missing chunk file always means damage.

This module only writes and reads groups and checks the schema name and
version. Which classes a model may name, and what their state and arrays must
look like, is decided on the estimators' side
(:mod:`wideml.models.persistence`, the public ``save_model`` and
``load_model``): nothing here imports or calls a name found in a file.

Estimators take part through two methods:

- ``est._model_state() -> (state: dict, arrays: dict[str, array-like])``;
  ``state`` must be JSON-serialisable; arrays may be numpy or dask arrays
  (dask arrays are streamed chunk by chunk, never loaded whole).
- ``Estimator._from_model_state(params, state, arrays) -> estimator`` where
  ``arrays`` maps names to lazily opened zarr arrays (index them to read).

wideml's estimators do not write these by hand: each declares the fitted
attributes a model keeps in a table, from which
``wideml.estimators.fitted.FittedState`` makes both methods.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from wideml._version import __version__
from wideml.exceptions import StoreError
from wideml.storage import schema
from wideml.storage.atomic import atomic_output
from wideml.storage.model_space import write_model_space
from wideml.storage.remote_write import is_remote


#: Attr marking a model saved with every chunk file written (a missing one is then damage, for any array).
CHUNKS_COMPLETE = "chunks_complete"


def qualified_name(cls: type) -> str:
    """``"wideml.estimators.lol.LOL"``: how a model names a class (a key of the models' registry, never imported)."""
    return schema.class_name(cls)


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of parameters/state: numpy to lists and scalars, estimators to ``{"__estimator__", "params"}`` entries."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "get_params") and hasattr(value, "fit"):
        return {"__estimator__": qualified_name(type(value)), "params": jsonable(value.get_params(deep=False))}
    return value


def write_model(path: str | os.PathLike, *, estimator: str, params: dict, state: dict, arrays: dict, overwrite: bool = False,
                provenance: dict | None = None, feature_layout: dict | None = None, space=None) -> Path:
    """Write a model group atomically (write aside, then rename); no pickle.

    Parameters
    ----------
    path : path-like
        Output directory; made absolute.
    estimator : str
        Qualified class name (see :func:`qualified_name`).
    params, state : dict
        JSON-ready after :func:`jsonable`.
    arrays : dict of str to array-like
        numpy or dask arrays; dask arrays are streamed chunk by chunk.
    overwrite : bool, default False
    provenance, feature_layout : dict, optional
    space : FeatureLayout, optional
        The training layout; when it carries a spatial reference or feature
        ids (:class:`~wideml.storage.model_space.TrainingLayout`) they are
        written too (attrs entries plus the ``mask`` / ``feature_ids`` arrays).

    Returns
    -------
    Path
    """
    import zarr

    path = path if is_remote(path) else Path(path).expanduser().resolve()  # a URL: written aside, then put in place
    attrs = {
        "schema": schema.MODEL_SCHEMA,
        "version": schema.MODEL_VERSION,
        "estimator": estimator,
        "params": jsonable(params),
        "state": jsonable(state),
        "package": f"wideml {__version__}",
        "provenance": jsonable(provenance or {}),
        "feature_layout": feature_layout,
        CHUNKS_COMPLETE: True,
    }
    json.dumps(attrs)  # fail before writing anything if not serialisable
    with atomic_output(path, overwrite) as tmp, zarr.config.set({"array.write_empty_chunks": True}):
        group = zarr.create_group(store=str(tmp), zarr_format=3)
        for name, arr in arrays.items():
            _write_array(group, name, arr)
        if space is not None:
            attrs.update(write_model_space(group, space))
        group.attrs[schema.ATTRS_KEY] = attrs
    return path if is_remote(path) else Path(path)


def _write_array(group, name: str, arr) -> None:
    if hasattr(arr, "dask"):
        chunks = tuple(c[0] if len(c) else 1 for c in arr.chunks)
        z = group.create_array(name, shape=arr.shape, chunks=chunks, dtype=arr.dtype, compressors=None)
        da.store(arr.rechunk(chunks), z, lock=False)
        return
    arr = np.asarray(arr)
    if arr.dtype.kind in "OSUT":  # text (labels): zarr v3 variable-length strings; read back with classes_from_model
        arr = np.asarray([v.decode() if isinstance(v, bytes) else str(v) for v in arr.ravel()], dtype=str).reshape(arr.shape)
        z = group.create_array(name, shape=arr.shape, dtype=str, chunks=arr.shape or (1,))
    else:
        chunks = tuple(max(1, s) for s in arr.shape)  # a 0-size array (e.g. no eigen-directions) still needs chunks >= 1
        z = group.create_array(name, shape=arr.shape, dtype=arr.dtype, chunks=chunks, compressors=None)
    if arr.size:
        z[...] = arr


def read_model_attrs(path: str | os.PathLike) -> tuple[dict, Any]:
    """Open a model group and check its schema name and version; returns (attrs, zarr group).

    Raises
    ------
    StoreError
        If the path is missing, is not a model, has unreadable or malformed
        metadata, or was written by a newer model schema.
    """
    import zarr

    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise StoreError(f"no model at {str(path)!r}; check the path, or fit one with `wideml fit`.")
    if not (path / "zarr.json").is_file():
        raise StoreError(f"{str(path)!r} is not a wideml model (no zarr.json); pass a directory written by `wideml fit` or save_model.")
    try:
        group = zarr.open_group(str(path), mode="r")
        attrs = group.attrs.get(schema.ATTRS_KEY, {})
    except Exception as exc:  # noqa: BLE001
        raise StoreError(f"{str(path)!r} has unreadable metadata ({type(exc).__name__}); the model is corrupt — refit it.") from None
    if not isinstance(attrs, dict):
        raise StoreError(f"{str(path)!r} has a {schema.ATTRS_KEY!r} attribute that is not a JSON object, so it is not a wideml model; "
                         "pass a directory written by `wideml fit` or save_model.")
    attrs = dict(attrs)
    if attrs.get("schema") != schema.MODEL_SCHEMA:
        what = "a feature store" if attrs.get("schema") == schema.FEATURE_STORE_SCHEMA else "not a wideml model"
        raise StoreError(f"{str(path)!r} is {what}; pass a directory written by `wideml fit` or save_model.")
    version = attrs.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > schema.MODEL_VERSION or version < 1:
        raise StoreError(
            f"{str(path)!r} was saved with model schema version {version!r}, which this wideml ({__version__}, "
            f"schema {schema.MODEL_VERSION}) does not know; upgrade wideml."
        )
    return attrs, group
