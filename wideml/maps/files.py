"""Files of feature-space maps: NIfTI images (or .npy), top-feature TSVs and the ``maps.json`` manifest.

Used by :func:`wideml.maps.write_maps`, which writes them into a folder made
atomically (:func:`wideml.storage.atomic.atomic_output`). Nothing here knows
about estimators: a map is a name and a float vector of shape (n_features,).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError
from wideml.storage.spatial import SpatialReference, require_nibabel


#: Name of the manifest written next to the maps.
MANIFEST = "maps.json"


def write_values(folder: Path, name: str, values: np.ndarray, spatial: SpatialReference | None) -> str:
    """Write one map: ``<name>.nii.gz`` in the original image space (``spatial``), else ``<name>.npy``; returns the file name.

    Parameters
    ----------
    folder : Path
    name : str
    values : ndarray of shape (n_features,)
    spatial : SpatialReference or None
        Masked voxels go back in place (0 outside the mask), with the stored affine and header fields.
    """
    if spatial is None:
        fname = f"{name}.npy"
        np.save(folder / fname, np.asarray(values, dtype=np.float64), allow_pickle=False)
        return fname
    nib = require_nibabel()
    fname = f"{name}.nii.gz"
    nib.save(spatial.to_image(values), str(folder / fname))
    return fname


def top_features(values: np.ndarray, top: int) -> np.ndarray:
    """Indices of the ``top`` largest ``|values|`` (ties: lower index first), shape (min(top, p),)."""
    order = np.argsort(-np.abs(np.asarray(values, dtype=np.float64)), kind="stable")
    return order[: max(0, int(top))]


def write_top_tsv(folder: Path, name: str, values: np.ndarray, feature_ids: np.ndarray, top: int) -> str:
    """Write ``<name>_top.tsv``: ``rank``, ``feature_id``, ``weight`` of the top-N features by |weight|; returns the file name."""
    fname = f"{name}_top.tsv"
    lines = ["rank\tfeature_id\tweight"]
    for rank, j in enumerate(top_features(values, top), start=1):
        fid = str(feature_ids[j]).replace("\t", " ").replace("\n", " ")
        lines.append(f"{rank}\t{fid}\t{float(values[j])!r}")
    (folder / fname).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return fname


def write_manifest(folder: Path, doc: dict) -> str:
    """Write the JSON manifest ``maps.json``; returns its name."""
    (folder / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return MANIFEST


def reference_from(reference, n_features: int) -> SpatialReference:
    """A SpatialReference from what an API user holds: a SpatialReference, a nibabel mask image, or a fitted NiftiMasker.

    Parameters
    ----------
    reference : SpatialReference, nibabel image, or object with ``mask_img_`` (nilearn's NiftiMasker)
        A mask image's non-zero voxels are the features, in C order of (i, j, k)
        (NiftiMasker's order).
    n_features : int
        The model's number of features: the mask must count exactly these.

    Raises
    ------
    ConfigError
        If the reference is none of these or counts another number of features.
    """
    if isinstance(reference, SpatialReference):
        ref = reference
    else:
        img = getattr(reference, "mask_img_", reference)
        if not (hasattr(img, "affine") and hasattr(img, "get_fdata") and hasattr(img, "header")):
            raise ConfigError(f"reference= is a {type(reference).__name__}; give a SpatialReference, a nibabel mask image or a "
                              "fitted NiftiMasker.")
        data = np.asarray(img.get_fdata())
        if data.ndim == 4 and data.shape[3] == 1:
            data = data[..., 0]
        if data.ndim != 3:
            raise ConfigError(f"the reference mask image has shape {data.shape}; give a 3-D mask image.")
        ref = SpatialReference.from_image(img, mask=data != 0)
    if ref.n_features != n_features:
        raise ConfigError(f"the reference locates {ref.n_features} features but the model has {n_features}; "
                          "give the mask the model's training data were masked with.")
    return ref
