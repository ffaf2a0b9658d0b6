"""Model stores: fitted estimators as zarr v3 groups (DESIGN.md §6). Never pickle.

A model group holds JSON attrs under ``wideml`` (schema, version, estimator
class, params, package version, provenance) and named arrays: small ones
(n- or K-sized) and p-sized ones chunked like X. Writes are atomic.

Estimators take part through two methods:

- ``est._model_state() -> (state: dict, arrays: dict[str, array-like])``;
  ``state`` must be JSON-serialisable; arrays may be numpy or dask arrays
  (dask arrays are streamed chunk by chunk, never loaded whole).
- ``Estimator._from_model_state(params, state, arrays) -> estimator`` where
  ``arrays`` maps names to lazily opened zarr arrays (index them to read).
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from wideml import __version__
from wideml.exceptions import StoreError
from wideml.storage import schema
from wideml.storage.atomic import atomic_output

#: Estimator classes that load_model may reconstruct (module path, class name).
_ALLOWED_PREFIX = "wideml."


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "get_params") and hasattr(value, "fit"):
        return {"__estimator__": f"{type(value).__module__}.{type(value).__qualname__}", "params": _jsonable(value.get_params(deep=False))}
    return value


def _unjson(value: Any) -> Any:
    if isinstance(value, dict) and "__estimator__" in value:
        cls = _import_class(value["__estimator__"])
        return cls(**{k: _unjson(v) for k, v in value["params"].items()})
    if isinstance(value, dict):
        return {k: _unjson(v) for k, v in value.items()}
    return value


def _import_class(qualified: str):
    module, _, name = qualified.rpartition(".")
    if not module.startswith(_ALLOWED_PREFIX.rstrip(".")) and not module.startswith("sklearn."):
        raise StoreError(f"model names estimator {qualified!r}, which wideml does not load; only wideml and scikit-learn classes are allowed.")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise StoreError(f"model names estimator {qualified!r}, which this wideml does not have; upgrade wideml.") from None


def save_model(estimator, path: str | os.PathLike, *, overwrite: bool = False, provenance: dict | None = None) -> Path:
    """Save a fitted wideml estimator as a zarr v3 group (atomic; no pickle).

    Parameters
    ----------
    estimator : fitted wideml estimator
    path : path-like
        Output directory (``.zarr`` suggested).
    overwrite : bool, default False
    provenance : dict, optional
        Extra JSON metadata (e.g. the training store's path).

    Returns
    -------
    Path
    """
    import zarr

    path = Path(path).expanduser().resolve()
    if not hasattr(estimator, "_model_state"):
        raise StoreError(f"{type(estimator).__name__} cannot be saved as a wideml model.")
    state, arrays = estimator._model_state()
    attrs = {
        "schema": schema.MODEL_SCHEMA,
        "version": schema.MODEL_VERSION,
        "estimator": f"{type(estimator).__module__}.{type(estimator).__qualname__}",
        "params": _jsonable(estimator.get_params(deep=False)),
        "state": _jsonable(state),
        "package": f"wideml {__version__}",
        "provenance": _jsonable(provenance or getattr(estimator, "provenance_", None) or {}),
    }
    json.dumps(attrs)  # fail before writing anything if not serialisable
    with atomic_output(path, overwrite) as tmp:
        group = zarr.create_group(store=str(tmp), zarr_format=3)
        for name, arr in arrays.items():
            _write_array(group, name, arr)
        group.attrs[schema.ATTRS_KEY] = attrs
    return Path(path)


def _write_array(group, name: str, arr) -> None:
    if hasattr(arr, "dask"):
        chunks = tuple(c[0] if len(c) else 1 for c in arr.chunks)
        z = group.create_array(name, shape=arr.shape, chunks=chunks, dtype=arr.dtype, compressors=None)
        import dask.array as da

        da.store(arr.rechunk(chunks), z, lock=False)
        return
    arr = np.asarray(arr)
    if arr.dtype.kind in "OU":
        arr = np.asarray([str(v) for v in arr.ravel()], dtype=str).reshape(arr.shape)
        z = group.create_array(name, shape=arr.shape, dtype=str, chunks=arr.shape or (1,))
    else:
        z = group.create_array(name, shape=arr.shape, dtype=arr.dtype, chunks=arr.shape if arr.size else None, compressors=None)
    if arr.size:
        z[...] = arr


def read_model_attrs(path: str | os.PathLike) -> tuple[dict, Any]:
    """Open a model group and check its schema; returns (attrs, zarr group)."""
    import zarr

    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise StoreError(f"no model at {str(path)!r}; check the path, or fit one with `wideml fit`.")
    if not (path / "zarr.json").is_file():
        raise StoreError(f"{str(path)!r} is not a wideml model (no zarr.json); pass a directory written by `wideml fit` or save_model.")
    try:
        group = zarr.open_group(str(path), mode="r")
        attrs = dict(group.attrs.get(schema.ATTRS_KEY, {}))
    except Exception as exc:  # noqa: BLE001
        raise StoreError(f"{str(path)!r} has unreadable metadata ({type(exc).__name__}); the model is corrupt — refit it.") from None
    if attrs.get("schema") != schema.MODEL_SCHEMA:
        what = "a feature store" if attrs.get("schema") == schema.FEATURE_STORE_SCHEMA else "not a wideml model"
        raise StoreError(f"{str(path)!r} is {what}; pass a directory written by `wideml fit` or save_model.")
    version = attrs.get("version")
    if not isinstance(version, int) or version > schema.MODEL_VERSION:
        raise StoreError(
            f"{str(path)!r} was saved with model schema version {version}, which this wideml ({__version__}, "
            f"schema {schema.MODEL_VERSION}) does not know; upgrade wideml."
        )
    return attrs, group


def load_model(path: str | os.PathLike):
    """Load a model saved by :func:`save_model`; p-sized arrays stay on disk (read lazily).

    Raises
    ------
    StoreError
        If the path is missing, is not a model, or was written by a newer schema.
    """
    path = Path(path).expanduser().resolve()
    attrs, group = read_model_attrs(path)
    cls = _import_class(attrs["estimator"])
    params = {k: _unjson(v) for k, v in attrs.get("params", {}).items()}
    arrays = {name: group[name] for name in group.array_keys()}
    est = cls._from_model_state(params, _unjson(attrs.get("state", {})), arrays)
    est.provenance_ = attrs.get("provenance", {})
    est.model_path_ = str(Path(path))
    return est
