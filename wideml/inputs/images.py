"""nibabel images and NIfTI files as input to the Python API.

Neuroimaging users hold their data as nibabel images, NIfTI files or the
output of nilearn's ``NiftiMasker``. :func:`images_to_array` turns images into
the ``(n_samples, n_features)`` matrix the estimators take, plus the
:class:`~wideml.storage.spatial.SpatialReference` needed to put p-sized results
(loadings, mean differences, weights) back into images with
:meth:`SpatialReference.to_image`::

    X, ref = wideml.images_to_array(["sub-01.nii.gz", "sub-02.nii.gz", ...], mask="brain_mask.nii.gz")
    model = wideml.LOL(n_components=5).fit(X, y)
    ref.to_image(model.components_[0])  # the first LOL direction as a NIfTI image

Feature order is the store's (and nilearn's): feature ``j`` is the ``j``-th
in-mask voxel in C order of the ``(i, j, k)`` voxel indices, i.e.
``X[s] == volume_s[mask]``. So ``NiftiMasker(mask_img=mask).fit_transform(imgs)``
and ``images_to_array(imgs, mask)[0]`` have the same columns, and NiftiMasker
output (a plain array) can be given to the estimators directly.

The estimators also accept images directly in ``fit``/``predict``/``transform``
(a 4-D image, or a list of 3-D/4-D images or NIfTI paths): they are converted
with ``mask=None``, i.e. every voxel of the grid is a feature. To use a brain
mask, call :func:`images_to_array` with it and pass the array (and give new data
through the same mask at predict time).

Memory: the result holds ``n_samples * n_features`` values in memory (float32
unless a source image stores float64); volumes are read one at a time. For
data larger than memory, ingest the files into a store (``wideml ingest FOLDER
--mask FILE``) instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.masking import inside, mask_of_image
from wideml.storage.layout import SPATIAL_INLINE_CHARS, FeatureLayout
from wideml.storage.model_space import with_space
from wideml.storage.spatial import SPATIAL_ATTR, SpatialReference, require_nibabel

_FIX_SPACE = "resample it to the first image (e.g. nilearn.image.resample_to_img)"


def is_image_input(X: Any) -> bool:
    """True for a nibabel image, or a non-empty list/tuple of nibabel images and NIfTI paths (no pass, no I/O)."""
    if _is_nibabel_image(X):
        return True
    if isinstance(X, (list, tuple)) and len(X) > 0:
        return all(_is_nibabel_image(v) or isinstance(v, (str, os.PathLike)) for v in X)
    return False


def _is_nibabel_image(obj: Any) -> bool:
    return type(obj).__module__.startswith("nibabel") and hasattr(obj, "dataobj") and hasattr(obj, "affine")


def _load(item: Any, nib, what: str):
    """A nibabel image from an image or a path; unreadable or missing files are one sentence naming them."""
    if _is_nibabel_image(item):
        return item
    path = Path(item).expanduser()
    if not path.is_file():
        raise WidemlError(f"{what} {str(path)!r} does not exist; check the path.")
    try:
        return nib.load(str(path))
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
        raise WidemlError(f"cannot read {what} {str(path)!r} as a NIfTI image ({type(exc).__name__}); give .nii/.nii.gz files.") from None


def _name(item: Any, index: int) -> str:
    return f"image {index} ({str(item)!r})" if isinstance(item, (str, os.PathLike)) else f"image {index}"


def _volumes_of(img, name: str):
    """Yield the 3-D volumes of a 3-D image (one) or a 4-D image (each volume one sample), reading one at a time."""
    shape = tuple(int(s) for s in img.shape)
    if len(shape) == 3:
        yield np.asanyarray(img.dataobj)
    elif len(shape) == 4 or (len(shape) > 4 and all(s == 1 for s in shape[4:])):
        for t in range(shape[3]):
            yield np.asanyarray(img.dataobj[:, :, :, t, ...]).reshape(shape[:3])
    else:
        raise WidemlError(f"{name} has shape {shape}; give 3-D volumes or 4-D images (each volume one sample).")


def _n_volumes(img) -> int:
    return int(img.shape[3]) if len(img.shape) >= 4 else 1


def resolve_mask(mask: Any, space: SpatialReference) -> np.ndarray | None:
    """The boolean mask on ``space``'s grid from a nibabel image, a path, a bool array or a fitted NiftiMasker.

    Parameters
    ----------
    mask : nibabel image, str or Path, ndarray of shape ``space.grid_shape``, fitted ``NiftiMasker``, or None
        Images and files must be in the same space (grid and affine) as the
        data; a voxel is inside when non-zero and finite. A numpy array must
        already be on the grid (its affine is taken to be the data's).
    space : SpatialReference
        The data's space (from the first image).

    Returns
    -------
    ndarray of bool, shape ``space.grid_shape``, or None when ``mask`` is None.
    """
    if mask is None:
        return None
    if hasattr(mask, "mask_img") and not _is_nibabel_image(mask):  # a nilearn masker
        if not hasattr(mask, "mask_img_"):
            raise WidemlError("the NiftiMasker given as mask is not fitted; call its fit() first (or give its mask image).")
        mask = mask.mask_img_
    if isinstance(mask, np.ndarray):
        if mask.shape != space.grid_shape:
            raise WidemlError(f"the mask array has shape {mask.shape} but the images' grid is {space.grid_shape}; give a mask on that grid.")
        arr = inside(mask)
        if not arr.any():
            raise WidemlError("the mask has no non-zero voxel, so there would be no feature; give a mask with voxels inside.")
        return arr
    return mask_of_image(_load(mask, require_nibabel(), "mask file"), space, "the mask", _FIX_SPACE)


def images_to_array(imgs: Any, mask: Any = None) -> tuple[np.ndarray, SpatialReference]:
    """Stack NIfTI images into a samples-by-features matrix (one read of each volume).

    Parameters
    ----------
    imgs : nibabel image, or list of nibabel images / NIfTI paths (str or Path)
        A 4-D image (each volume one sample), a 3-D image (one sample), or a
        list of 3-D and 4-D images or files; all on the same grid and affine.
    mask : nibabel image, path, bool ndarray, fitted nilearn ``NiftiMasker``, or None
        The voxels kept (see :func:`resolve_mask`); None keeps every voxel.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        ``X[s] == volume_s[mask]`` (``volume_s.ravel()`` without a mask),
        float32 unless a source stores float64.
    ref : SpatialReference
        Grid, affine and header fields of the first image, and the mask.

    Raises
    ------
    WidemlError
        No image, an unreadable or missing file, an image on another grid or
        affine, a mask of another shape or space, or an empty mask.
    """
    nib = require_nibabel()
    items = [imgs] if _is_nibabel_image(imgs) or isinstance(imgs, (str, os.PathLike)) else list(imgs) if isinstance(imgs, (list, tuple)) else None
    if not items:
        raise WidemlError("images_to_array needs a nibabel image or a non-empty list of images or NIfTI paths; "
                          f"got {type(imgs).__name__}.")
    images = [_load(item, nib, "image file") for item in items]
    first = images[0]
    if len(first.shape) < 3:
        raise WidemlError(f"{_name(items[0], 0)} has shape {tuple(first.shape)}; give 3-D volumes or 4-D images.")
    space = SpatialReference.from_image(first)
    for i, img in enumerate(images[1:], start=1):
        if len(img.shape) < 3:
            raise WidemlError(f"{_name(items[i], i)} has shape {tuple(img.shape)}; give 3-D volumes or 4-D images.")
        differs = space.same_space(SpatialReference.from_image(img))
        if differs is not None:
            raise WidemlError(f"{_name(items[i], i)} has {differs} than the first image; {_FIX_SPACE}.")
    mask_arr = resolve_mask(mask, space)
    ref = SpatialReference(space.grid_shape, space.affine, space.header, mask_arr)
    wide = any(np.dtype(img.get_data_dtype()) == np.float64 for img in images if hasattr(img, "get_data_dtype"))
    X = np.empty((sum(_n_volumes(img) for img in images), ref.n_features), dtype=np.float64 if wide else np.float32)
    row = 0
    for i, img in enumerate(images):
        for vol in _volumes_of(img, _name(items[i], i)):
            X[row] = vol[mask_arr] if mask_arr is not None else np.asarray(vol).ravel()
            row += 1
    return X, ref


def image_layout(n_features: int, ref: SpatialReference):
    """The feature layout of images given to an estimator, as a store ingested from the same files would have it.

    ``feature_shape`` is the grid when every voxel is a feature (None with a
    mask) and the spatial record is the store's (``spatial_reference``), so a
    model fitted on images checks stores and images of another space, and back.
    """
    spatial = {SPATIAL_ATTR: ref.to_attrs()}
    sha = hashlib.sha256(json.dumps(spatial, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    record = spatial if len(json.dumps(spatial)) <= SPATIAL_INLINE_CHARS else {"sha256": sha}
    layout = FeatureLayout(int(n_features), ref.grid_shape if ref.mask is None else None, record, sha)
    return with_space(layout, ref)


def images_as_input(X: Any) -> tuple[np.ndarray, SpatialReference, Any]:
    """Images given to ``fit``/``predict``/``transform``: the array (every voxel a feature), its space and its layout."""
    arr, ref = images_to_array(X)
    return arr, ref, image_layout(arr.shape[1], ref)
