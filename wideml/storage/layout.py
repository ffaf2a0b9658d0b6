"""Feature identity: the layout of the features a model was trained on (docs/architecture.md, "Trust").

A :class:`FeatureLayout` records what identifies the columns of X: their
number, the store's ``feature_shape`` (e.g. a brain volume's (x, y, z)), its
spatial reference when it has one (attrs such as ``affine`` or a mask
fingerprint, kept whole when small and as a sha256 when large) and a sha256
fingerprint of its ``feature_ids`` (ordered, and as a sorted multiset, so a
mismatch can say "another order" or "other ids"). A model records the layout
at fit; ``predict``/``transform`` compare the new data's layout with it and
refuse a difference, comparing only what both sides know (numpy input has no
ids or shape: then only the number of features counts; a pandas DataFrame's
string column names count as feature ids).

The check can be switched off by a user who knows better: the dask config key
``wideml.check-feature-layout`` (default true), the context manager
:func:`ignore_feature_layout`, or ``--ignore-feature-layout`` on the command line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from wideml.exceptions import StoreError, WidemlError
from wideml.storage.featurestore import FeatureStore
from wideml.storage.feature_table import TABLE_ATTR

#: Store attrs that make up a spatial reference (whichever are present).
SPATIAL_KEYS = ("affine", "mask", "mask_sha256", "volume_shape", "spatial_reference")
#: A spatial reference whose JSON is longer than this is recorded by its sha256 only.
SPATIAL_INLINE_CHARS = 2048
CONFIG_KEY = "wideml.check-feature-layout"
OVERRIDE_HINT = ("give data in the training layout, or, if you know the features match, pass --ignore-feature-layout "
                 "(API: with wideml.ignore_feature_layout())")


def _sha256_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def id_fingerprints(ids) -> tuple[str, str]:
    """sha256 of the ids in order, and of the ids sorted (equal multisets in another order share the second)."""
    strs = [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(ids).ravel().tolist()]
    ordered = hashlib.sha256("\x00".join(strs).encode()).hexdigest()
    as_set = hashlib.sha256("\x00".join(sorted(strs)).encode()).hexdigest()
    return ordered, as_set


@dataclass(frozen=True)
class FeatureLayout:
    """What identifies the features of X.

    Attributes
    ----------
    n_features : int
    feature_shape : tuple of int or None
    spatial : dict or None
        The spatial-reference attrs (or ``{"sha256": ...}`` when large).
    spatial_sha256 : str or None
    ids_sha256, ids_sorted_sha256 : str or None
        Fingerprints of ``feature_ids`` in order and sorted.
    """

    n_features: int
    feature_shape: tuple[int, ...] | None = None
    spatial: dict | None = None
    spatial_sha256: str | None = None
    ids_sha256: str | None = None
    ids_sorted_sha256: str | None = None

    def to_json(self) -> dict:
        return {"n_features": self.n_features, "feature_shape": list(self.feature_shape) if self.feature_shape else None,
                "spatial": self.spatial, "spatial_sha256": self.spatial_sha256, "ids_sha256": self.ids_sha256,
                "ids_sorted_sha256": self.ids_sorted_sha256}

    @classmethod
    def from_json(cls, doc: Any) -> "FeatureLayout":
        """Rebuild from :meth:`to_json`; raises ValueError describing a malformed record."""
        if not isinstance(doc, dict) or set(doc) - set(cls.__dataclass_fields__):
            raise ValueError("its feature_layout is not an object with the known entries")
        n = doc.get("n_features")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"its feature_layout.n_features is {n!r}, not a positive integer")
        shape = doc.get("feature_shape")
        if shape is not None and not (isinstance(shape, list) and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape)):
            raise ValueError(f"its feature_layout.feature_shape is {shape!r}, not a list of positive integers")
        for key in ("spatial_sha256", "ids_sha256", "ids_sorted_sha256"):
            if doc.get(key) is not None and not isinstance(doc[key], str):
                raise ValueError(f"its feature_layout.{key} is not a string")
        if doc.get("spatial") is not None and not isinstance(doc["spatial"], dict):
            raise ValueError("its feature_layout.spatial is not an object")
        return cls(n, tuple(shape) if shape else None, doc.get("spatial"), doc.get("spatial_sha256"), doc.get("ids_sha256"),
                   doc.get("ids_sorted_sha256"))


def layout_of(X) -> FeatureLayout | None:
    """The feature layout of training or new data: a FeatureStore, a pandas DataFrame or any 2-D array (metadata only)."""
    if isinstance(X, FeatureStore):
        spatial = {k: X.attrs[k] for k in SPATIAL_KEYS if k in X.attrs} or None
        table = X.attrs.get(TABLE_ATTR)
        if isinstance(table, dict):  # which features these are (variants' alleles, grayordinates), not the table's info
            spatial = {**(spatial or {}), TABLE_ATTR: {"kind": table.get("kind"), "columns_sha256": table.get("columns_sha256")}}
        spatial_sha = _sha256_json(spatial) if spatial else None
        if spatial and len(json.dumps(spatial)) > SPATIAL_INLINE_CHARS:
            spatial = {"sha256": spatial_sha}
        ordered, as_set = id_fingerprints(X.feature_ids) if X.feature_ids is not None else (None, None)
        return FeatureLayout(int(X.n_features), tuple(int(s) for s in X.feature_shape) if X.feature_shape else None,
                             spatial, spatial_sha, ordered, as_set)
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return None
    columns = getattr(X, "columns", None) if type(X).__module__.startswith("pandas") else None
    if columns is not None and len(columns) and all(isinstance(c, str) for c in columns):
        ordered, as_set = id_fingerprints(list(columns))
        return FeatureLayout(int(shape[1]), ids_sha256=ordered, ids_sorted_sha256=as_set)
    return FeatureLayout(int(shape[1]))


def layout_checks_enabled() -> bool:
    """False inside :func:`ignore_feature_layout` or when ``wideml.check-feature-layout`` is false."""
    import dask.config

    value = dask.config.get(CONFIG_KEY, True)
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "0", "off")
    return bool(value)


def ignore_feature_layout():
    """Context manager: ``predict``/``transform`` inside it skip the feature-layout check (not the feature count).

    Use it only when you know the new data's features are the training features in the training order
    (e.g. a store whose ``feature_ids`` were renamed); otherwise the predictions are wrong.

    Returns
    -------
    dask.config.set
        The setting ``wideml.check-feature-layout = False``, undone when the ``with`` block ends.
    """
    import dask.config

    return dask.config.set({CONFIG_KEY: False})


def check_layout(model: FeatureLayout | None, data: FeatureLayout | None, *, data_name: str = "the data", model_name: str = "the model") -> None:
    """Refuse data whose feature layout differs from the model's, in one sentence saying what differs.

    Compares only what both layouts know. The number of features is checked by the caller.

    Raises
    ------
    WidemlError
    """
    if model is None or data is None or not layout_checks_enabled():
        return
    if model.feature_shape and data.feature_shape and tuple(model.feature_shape) != tuple(data.feature_shape):
        raise WidemlError(f"the feature_shape {tuple(data.feature_shape)} of {data_name} differs from {model_name}'s "
                          f"{tuple(model.feature_shape)} (the same {data.n_features} features laid out differently); {OVERRIDE_HINT}.")
    if model.spatial_sha256 and data.spatial_sha256 and model.spatial_sha256 != data.spatial_sha256:
        keys = ", ".join(sorted(set(model.spatial or {}) | set(data.spatial or {}))) or "affine/mask"
        if keys == TABLE_ATTR:
            raise WidemlError(f"the feature table of {data_name} (e.g. variants' positions or counted alleles) differs from the one "
                              f"{model_name} was trained on, so its columns would be read as other features (a flipped allele, "
                              f"another genome build or surface); {OVERRIDE_HINT}.")
        raise WidemlError(f"the spatial reference ({keys}) of {data_name} differs from the one {model_name} was trained on; {OVERRIDE_HINT}.")
    if model.ids_sha256 and data.ids_sha256 and model.ids_sha256 != data.ids_sha256:
        how = (f"are {model_name}'s feature ids in another order" if model.ids_sorted_sha256 == data.ids_sorted_sha256
               else f"are other ids than the ones {model_name} was trained on")
        raise WidemlError(f"the feature_ids of {data_name} {how}, so its columns would be read as other features; {OVERRIDE_HINT}.")


def layout_from_attrs(doc: Any, path: str) -> FeatureLayout | None:
    """The layout a model's attrs record (None for models saved before layouts were recorded)."""
    if doc is None:
        return None
    try:
        return FeatureLayout.from_json(doc)
    except ValueError as exc:
        raise StoreError(f"the model at {path!r} cannot be loaded: {exc}; the model was edited or is corrupt — refit it.") from None
