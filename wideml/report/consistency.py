"""Whether the inputs of one report belong together: the store, the cross-validation, the model and the maps.

The report's sections come from separate files, so one report could combine a
store, a cross-validation of another store, a model fitted on a third and the
maps of a fourth model. What each file records is compared, and every mismatch
becomes one sentence of a warning box at the top of the page:

- the cross-validation JSON records its ``store`` (path) and, since the report
  existed, ``store_fingerprint``; a model's provenance records ``store`` and
  ``store_fingerprint`` (:func:`wideml.estimators.kernel.store_identity.store_identity`);
- two stores are the same when their ``store_id`` agree (both known), else when
  their X files' digest agrees, else when their paths resolve alike;
- a maps folder's ``maps.json`` records the ``model_path`` it was drawn from.

No chunk of X is read: one ``stat`` per file of X at most.
"""

from __future__ import annotations

import os

from wideml.estimators.kernel.store_identity import store_identity


def _real(path) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    return path if "://" in path else os.path.realpath(path)


def identity_of(path) -> dict | None:
    """``{"path", "store_id", "x_files"}`` of the local store at ``path`` (no chunk read); URL stores: path only."""
    real = _real(os.fspath(path)) if path is not None else None
    if real is None:
        return None
    if "://" in real:
        return {"path": real, "store_id": None, "x_files": None}
    try:
        return {"path": real, **store_identity(real)}
    except OSError:
        return {"path": real, "store_id": None, "x_files": None}


def recorded(path, fingerprint) -> dict | None:
    """The store identity a cross-validation JSON or a model's provenance recorded (None: nothing recorded)."""
    fp = fingerprint if isinstance(fingerprint, dict) else {}
    real = _real(path)
    if real is None and not fp:
        return None
    return {"path": real, "store_id": fp.get("store_id"), "x_files": fp.get("x_files")}


def same_store(a: dict | None, b: dict | None) -> bool | None:
    """Whether two store identities name the same store; None when nothing tells."""
    if a is None or b is None:
        return None
    if a.get("store_id") and b.get("store_id"):
        return a["store_id"] == b["store_id"]
    if a.get("x_files") and b.get("x_files") and a["x_files"] == b["x_files"]:
        return True
    if a.get("path") and b.get("path"):
        return a["path"] == b["path"]
    return None


def _name(identity: dict) -> str:
    return identity.get("path") or f"store id {identity.get('store_id')}"


def mismatches(store: dict | None, cv: dict | None, model: dict | None, maps: dict | None, model_path=None) -> list[str]:
    """One sentence per pair of the report's inputs that do not belong together.

    Parameters
    ----------
    store : dict or None
        :func:`identity_of` the store given.
    cv, model : dict or None
        :func:`recorded` by the cross-validation JSON and by the model.
    maps : dict or None
        The maps section's facts (``model_path``: the model the maps were drawn from).
    model_path : str or None
        The model given.

    Returns
    -------
    list of str
    """
    out = []
    if same_store(store, cv) is False:
        out.append(f"the cross-validation was run on {_name(cv)}, not on the store of this report ({_name(store)}).")
    if same_store(store, model) is False:
        out.append(f"the model was fitted on {_name(model)}, not on the store of this report ({_name(store)}).")
    if same_store(cv, model) is False:
        out.append(f"the model was fitted on {_name(model)}, but the cross-validation was run on {_name(cv)}.")
    drawn = _real(maps.get("model_path")) if maps else None
    given = _real(os.fspath(model_path)) if model_path is not None else None
    if drawn and given and drawn != given:
        out.append(f"the maps were drawn from the model {drawn}, not from the model of this report ({given}).")
    return out
