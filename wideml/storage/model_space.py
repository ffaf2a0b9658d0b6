"""What a model keeps of its training features' identity besides the layout fingerprints: space and names.

A model fitted on a store ingested from images keeps the store's
:class:`~wideml.storage.spatial.SpatialReference` (grid, affine, header fields
and mask), and a model fitted on a store with ``feature_ids`` keeps the ids
themselves, so its p-sized results (loadings, class means, weight maps) can
be written back as images or named features from the model file alone
(:func:`wideml.maps.write_maps`).

In memory both ride on the estimator's ``feature_layout_`` as a
:class:`TrainingLayout` (a :class:`~wideml.storage.layout.FeatureLayout` with
two extra fields that take no part in comparisons or in its JSON). On disk a
model group holds:

- the attrs entry ``"spatial_reference"`` (:meth:`SpatialReference.to_attrs`)
  and the uint8 array ``mask`` when the reference has a mask;
- the attrs entry ``"feature_ids"`` (``{"n": p}``) and the string array
  ``feature_ids`` of shape (p,), chunked by :data:`IDS_CHUNK`;
- the attrs entry ``"feature_table"`` and the group ``feature_table`` of a
  store with a :class:`~wideml.storage.feature_table.FeatureTable`
  (variants' positions, grayordinates' structures).

Both are checked at load (:func:`read_model_space`): the mask must hash to the
recorded sha256 and count the model's features, the ids must number p and
match the layout's fingerprint. Models saved without them load as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wideml.storage.feature_table import TABLE_ATTR, TABLE_GROUP, FeatureTable, read_feature_table, write_feature_table
from wideml.storage.layout import FeatureLayout, id_fingerprints
from wideml.storage.spatial import MASK_NAME, SPATIAL_ATTR, SpatialReference, mask_sha256, write_spatial
from wideml.exceptions import StoreError

#: Name of the feature-ids array and attrs entry of a model group.
IDS_NAME = "feature_ids"
#: Ids per chunk of the model's ``feature_ids`` array.
IDS_CHUNK = 65536
#: Arrays a model group may hold besides its estimator's schema (see :func:`read_model_space`).
SPACE_ARRAYS = (MASK_NAME, IDS_NAME)


@dataclass(frozen=True)
class TrainingLayout(FeatureLayout):
    """A :class:`FeatureLayout` that also carries the training features' space and names (not compared, not in its JSON).

    Attributes
    ----------
    spatial_reference : SpatialReference or None
    feature_ids : ndarray of shape (n_features,) or None
    feature_table : FeatureTable or None
    """

    spatial_reference: SpatialReference | None = field(default=None, compare=False, repr=False)
    feature_ids: np.ndarray | None = field(default=None, compare=False, repr=False)
    feature_table: FeatureTable | None = field(default=None, compare=False, repr=False)


def with_space(layout: FeatureLayout | None, spatial: SpatialReference | None, feature_ids=None,
               feature_table: FeatureTable | None = None) -> FeatureLayout | None:
    """``layout`` carrying ``spatial``, ``feature_ids`` and ``feature_table`` (unchanged when all are None or there is no layout)."""
    if layout is None or (spatial is None and feature_ids is None and feature_table is None):
        return layout
    base = {name: getattr(layout, name) for name in FeatureLayout.__dataclass_fields__}
    ids = None if feature_ids is None else np.asarray(feature_ids)
    return TrainingLayout(**base, spatial_reference=spatial, feature_ids=ids, feature_table=feature_table)


def layout_spatial(layout: FeatureLayout | None) -> SpatialReference | None:
    """The spatial reference a layout carries (None for a plain FeatureLayout)."""
    return getattr(layout, "spatial_reference", None)


def layout_feature_ids(layout: FeatureLayout | None) -> np.ndarray | None:
    """The feature ids a layout carries (None for a plain FeatureLayout)."""
    return getattr(layout, "feature_ids", None)


def layout_feature_table(layout: FeatureLayout | None) -> FeatureTable | None:
    """The feature table a layout carries (None for a plain FeatureLayout)."""
    return getattr(layout, "feature_table", None)


def write_model_space(group, layout: FeatureLayout | None) -> dict:
    """Write the mask and feature-ids arrays of ``layout`` into an open model group; returns the attrs entries to add."""
    entries: dict[str, Any] = {}
    spatial = layout_spatial(layout)
    if spatial is not None:
        entries[SPATIAL_ATTR] = write_spatial(group, spatial)
    ids = layout_feature_ids(layout)
    if ids is not None:
        texts = np.asarray([v.decode() if isinstance(v, bytes) else str(v) for v in ids.ravel()], dtype=str)
        arr = group.create_array(IDS_NAME, shape=texts.shape, dtype=str, chunks=(max(1, min(IDS_CHUNK, texts.size)),))
        if texts.size:
            arr[...] = texts
        entries[IDS_NAME] = {"n": int(texts.size)}
    table = layout_feature_table(layout)
    if table is not None:
        entries[TABLE_ATTR] = write_feature_table(group, table)
    return entries


class SpaceViolation(Exception):
    """What is wrong with a model's spatial reference or feature ids (a phrase; the caller names the model)."""


def read_model_space(group, attrs: dict, n_features: int | None, layout: FeatureLayout | None) -> tuple[SpatialReference | None, np.ndarray | None]:
    """The spatial reference and feature ids a model group records, checked; (None, None) for models without them.

    Parameters
    ----------
    group : zarr.Group
        The opened model group (the mask is read: it is grid-sized, uint8).
    attrs : dict
        The model's wideml attrs.
    n_features : int or None
        The model's number of features, when known.
    layout : FeatureLayout or None
        The recorded layout: the ids must match its ``ids_sha256``.

    Raises
    ------
    SpaceViolation
        A phrase naming the first problem (tampered mask, ids of another length...).
    """
    present = set(group.array_keys())
    spatial = _read_spatial(group, attrs.get(SPATIAL_ATTR), present, n_features)
    ids = _read_ids(group, attrs.get(IDS_NAME), present, n_features, layout)
    return spatial, ids


def read_model_table(group, attrs: dict, n_features: int | None) -> FeatureTable | None:
    """The feature table a model group records, checked (:func:`~wideml.storage.feature_table.read_feature_table`); None without one.

    Raises
    ------
    SpaceViolation
        A phrase naming the problem (a table edited, truncated or of another length).
    """
    if attrs.get(TABLE_ATTR) is None:
        if TABLE_GROUP in set(group.group_keys()):
            raise SpaceViolation(f"it holds the unknown group {TABLE_GROUP!r}")
        return None
    try:
        return read_feature_table(group, attrs, n_features, "it")
    except StoreError as exc:
        raise SpaceViolation(str(exc).removeprefix("it has ").split("; recreate")[0]) from None


def _read_spatial(group, doc: Any, present: set, n_features: int | None) -> SpatialReference | None:
    if doc is None:
        if MASK_NAME in present:
            raise SpaceViolation(f"it holds the unknown array {MASK_NAME!r} (a mask without a spatial_reference)")
        return None
    if not isinstance(doc, dict):
        raise SpaceViolation("its spatial_reference is not a JSON object")
    mask = None
    if doc.get("mask") is not None:
        if MASK_NAME not in present:
            raise SpaceViolation(f"it records a mask but has no {MASK_NAME!r} array")
        try:
            mask = np.asarray(group[MASK_NAME][...]).astype(bool)
        except Exception as exc:  # noqa: BLE001 - corrupt chunks surface as many types
            raise SpaceViolation(f"its {MASK_NAME!r} array cannot be read ({type(exc).__name__})") from None
        if doc.get("mask_sha256") != mask_sha256(mask):
            raise SpaceViolation(f"its {MASK_NAME!r} array differs from the mask it recorded (sha256 mismatch)")
        if doc.get("n_features") != int(mask.sum()):
            raise SpaceViolation(f"its {MASK_NAME!r} array has {int(mask.sum())} voxels but the model records {doc.get('n_features')!r}")
    elif MASK_NAME in present:
        raise SpaceViolation(f"it holds a {MASK_NAME!r} array but its spatial_reference records no mask")
    try:
        ref = SpatialReference.from_attrs(doc, mask, "the model")
    except StoreError:
        raise SpaceViolation("its spatial_reference is malformed") from None
    except Exception as exc:  # noqa: BLE001 - e.g. a mask of another shape than the recorded grid
        raise SpaceViolation(f"its spatial_reference does not fit its mask ({type(exc).__name__})") from None
    if n_features is not None and ref.n_features != n_features:
        raise SpaceViolation(f"its spatial_reference locates {ref.n_features} features but the model has {n_features}")
    return ref


def _read_ids(group, doc: Any, present: set, n_features: int | None, layout: FeatureLayout | None) -> np.ndarray | None:
    if doc is None:
        if IDS_NAME in present:
            raise SpaceViolation(f"it holds the unknown array {IDS_NAME!r}")
        return None
    if IDS_NAME not in present or not isinstance(doc, dict):
        raise SpaceViolation(f"it records feature ids but has no {IDS_NAME!r} array")
    try:
        raw = np.asarray(group[IDS_NAME][...])
        ids = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in raw.ravel()], dtype=str).reshape(raw.shape)
    except Exception as exc:  # noqa: BLE001
        raise SpaceViolation(f"its {IDS_NAME!r} array cannot be read ({type(exc).__name__})") from None
    if ids.ndim != 1 or ids.size != doc.get("n") or (n_features is not None and ids.size != n_features):
        raise SpaceViolation(f"its {IDS_NAME!r} array holds {ids.size} ids for {n_features} features")
    if layout is not None and layout.ids_sha256 and id_fingerprints(ids)[0] != layout.ids_sha256:
        raise SpaceViolation(f"its {IDS_NAME!r} array differs from the ids it was trained on (fingerprint mismatch)")
    return ids
