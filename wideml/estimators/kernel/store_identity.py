"""Which training store a kernel model was fitted on: an identity that changes when the store's X changes.

A kernel model fitted on a feature store keeps the store's path and crosses
new data with the store's X at predict (:mod:`wideml.estimators.kernel.training`).
Another store put at that path, or the store's X rewritten in place, would
silently change its predictions; so the fit records the store's identity and
every use compares it (:func:`check_store_identity`):

- ``store_id``: the random id :func:`wideml.create_store` writes into the
  store's ``wideml`` attributes (None for stores written before it was); a
  copy of the store keeps it, another store has its own;
- ``x_files``: a digest of the name, size and modification time of every file
  of the store's X (the zarr ``X`` folder: its ``zarr.json`` and chunk files;
  an HDF5 store's file), so X rewritten in place (same id) shows too.
  Reading a store changes none of these; a rename or move keeps them; a copy
  that does not keep modification times (``cp -r``) is refused.

Cost: one ``stat`` per file of X (no chunk is read), at fit and at each predict.
"""

from __future__ import annotations

import json
import os

import h5py

from wideml.exceptions import StoreError
from wideml.storage import schema
from wideml.storage.file_digest import files_digest


def _store_id(path: str) -> str | None:
    """The ``store_id`` in a store's ``wideml`` attributes, or None (a store written before ids, or unreadable attrs)."""
    try:
        if os.path.isdir(path):
            with open(os.path.join(path, "zarr.json"), "rb") as f:
                attrs = json.load(f).get("attributes", {}).get(schema.ATTRS_KEY, {})
        else:
            with h5py.File(path, "r") as handle:
                attrs = json.loads(handle.attrs.get(schema.ATTRS_KEY, "{}"))
    except (OSError, ValueError, AttributeError):
        return None
    value = attrs.get("store_id") if isinstance(attrs, dict) else None
    return value if isinstance(value, str) else None


def _x_files(path: str) -> str:
    """Digest of (relative name, size, modification time in ns) of every file of the store's X."""
    return files_digest(os.path.join(path, schema.X_NAME) if os.path.isdir(path) else path)[:32]


def store_identity(path: str) -> dict:
    """``{"store_id": str or None, "x_files": str}`` of the feature store at ``path`` (no chunk read).

    Parameters
    ----------
    path : str
        Absolute path of a feature store (zarr folder or HDF5 file).
    """
    return {"store_id": _store_id(path), "x_files": _x_files(path)}


def check_store_identity(recorded: dict | None, path: str) -> None:
    """Refuse, in one sentence, a training store at ``path`` that is not the one whose identity was ``recorded``.

    ``recorded`` None (a model saved before identities were recorded) checks nothing.

    Raises
    ------
    StoreError
        If the store's id or its X files differ from the recorded ones.
    """
    if not recorded:
        return
    now = store_identity(path)
    if recorded.get("store_id") and now["store_id"] != recorded["store_id"]:
        reason = "another store now sits at that path: its store id differs"
    elif now["x_files"] != recorded.get("x_files"):
        reason = "the files of its X were rewritten or replaced"
    else:
        return
    raise StoreError(f"the training store at {path} has changed since the model was fitted ({reason}); "
                     "put the original store back at that path, or refit the model.")


__all__ = ["check_store_identity", "store_identity"]
