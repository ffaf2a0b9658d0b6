"""Spatial references: where each feature of a store sits in an image grid.

A store ingested from NIfTI volumes keeps what is needed to put p-sized
results back into images: the voxel grid's shape, the affine (voxel indices to
world millimetres), a few header fields (voxel sizes, units, qform/sform codes)
and, when only in-mask voxels were stored, the boolean mask itself.

Feature order is fixed: feature ``j`` is the ``j``-th voxel of the mask in C
order of the ``(i, j, k)`` voxel indices, i.e. ``X[s] == volume_s[mask]``
(``volume_s.ravel()`` when there is no mask). nilearn's ``NiftiMasker`` uses
the same order, so its output columns match ours for the same mask.

On disk (schema of the feature store, version 3):

- the wideml attrs hold ``"spatial_reference"``: the JSON of
  :meth:`SpatialReference.to_attrs` (grid shape, affine, header fields,
  ``"mask": "mask"`` or None, the mask's sha256 and voxel count);
- the array ``mask`` (uint8, grid-shaped, C order) holds the mask when there is one.

Models copy the same two things so maps can be written from a model file alone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wideml.exceptions import StoreError, WidemlError

#: Key of the spatial reference inside the wideml attrs of a store or model.
SPATIAL_ATTR = "spatial_reference"
#: Name of the mask array next to X (stores) or in the model group.
MASK_NAME = "mask"
#: Header fields kept (besides the affine); all are plain JSON numbers.
HEADER_KEYS = ("zooms", "xyzt_units", "qform_code", "sform_code")


def mask_sha256(mask: np.ndarray) -> str:
    """sha256 of a boolean mask's shape and C-order bits (equal masks, equal hashes)."""
    mask = np.ascontiguousarray(mask, dtype=bool)
    digest = hashlib.sha256(repr(tuple(mask.shape)).encode())
    digest.update(np.packbits(mask.ravel()).tobytes())
    return digest.hexdigest()


@dataclass(frozen=True, eq=False)
class SpatialReference:
    """The image space of a store's features.

    Attributes
    ----------
    grid_shape : tuple of int
        Voxel grid of one sample, e.g. ``(182, 218, 182)``.
    affine : ndarray of shape (4, 4)
        Voxel indices to world coordinates (float64).
    header : dict
        ``zooms`` (voxel sizes, list of float), ``xyzt_units``, ``qform_code``,
        ``sform_code`` (ints) — whichever the source had.
    mask : ndarray of bool, shape ``grid_shape``, or None
        The stored voxels; None means every voxel of the grid is a feature.
    """

    grid_shape: tuple[int, ...]
    affine: np.ndarray
    header: dict = field(default_factory=dict)
    mask: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "grid_shape", tuple(int(s) for s in self.grid_shape))
        object.__setattr__(self, "affine", np.asarray(self.affine, dtype=np.float64).reshape(4, 4))
        if self.mask is not None:
            mask = np.asarray(self.mask).astype(bool, copy=False)
            if mask.shape != self.grid_shape:
                raise WidemlError(f"the mask has shape {mask.shape} but the grid is {self.grid_shape}; give a mask in the same space.")
            object.__setattr__(self, "mask", mask)

    # ------------------------------------------------------------------ facts
    @property
    def n_features(self) -> int:
        """Number of features: voxels in the mask, or the whole grid."""
        return int(self.mask.sum()) if self.mask is not None else int(np.prod(self.grid_shape))

    def flat_index(self) -> np.ndarray:
        """Positions of the features in the C-order raveled grid, shape (n_features,)."""
        if self.mask is None:
            return np.arange(int(np.prod(self.grid_shape)))
        return np.flatnonzero(self.mask.ravel())

    def same_space(self, other: "SpatialReference", atol: float = 1e-4) -> str | None:
        """None when ``other`` has the same grid and affine, else what differs (a phrase)."""
        if self.grid_shape != other.grid_shape:
            return f"grid {other.grid_shape} instead of {self.grid_shape}"
        if not np.allclose(self.affine, other.affine, atol=atol, rtol=0):
            return "another affine (voxel-to-world matrix)"
        return None

    # ----------------------------------------------------------- conversions
    def to_volume(self, values: np.ndarray, fill: float = 0.0) -> np.ndarray:
        """Put p-sized values back on the grid.

        Parameters
        ----------
        values : ndarray of shape (n_features,) or (n_features, k)
        fill : float
            Value of voxels outside the mask.

        Returns
        -------
        ndarray of shape ``grid_shape`` or ``grid_shape + (k,)``
        """
        values = np.asarray(values)
        if values.shape[0] != self.n_features:
            raise WidemlError(f"{values.shape[0]} values do not fit {self.n_features} features of this spatial reference.")
        extra = values.shape[1:]
        out = np.full((int(np.prod(self.grid_shape)),) + extra, fill, dtype=np.result_type(values.dtype, np.float32))
        out[self.flat_index()] = values
        return out.reshape(self.grid_shape + extra)

    def to_image(self, values: np.ndarray, fill: float = 0.0):
        """A nibabel ``Nifti1Image`` of p-sized values in this space (affine and header fields kept)."""
        nib = require_nibabel()
        data = self.to_volume(values, fill).astype(np.float32, copy=False)
        img = nib.Nifti1Image(data, self.affine)
        hdr = img.header
        zooms = self.header.get("zooms")
        if zooms:
            full = list(zooms)[: data.ndim] + [1.0] * max(0, data.ndim - len(zooms))
            hdr.set_zooms(tuple(float(z) for z in full[: data.ndim]))
        if "xyzt_units" in self.header:
            hdr["xyzt_units"] = int(self.header["xyzt_units"])
        img.set_qform(self.affine, code=int(self.header.get("qform_code", 1)))
        img.set_sform(self.affine, code=int(self.header.get("sform_code", 1)))
        return img

    @classmethod
    def from_image(cls, img, mask: np.ndarray | None = None) -> "SpatialReference":
        """The space of a nibabel image (3-D, or 4-D: the first three axes), with an optional mask."""
        hdr = img.header
        header: dict[str, Any] = {"zooms": [float(z) for z in hdr.get_zooms()[:3]]}
        for key in ("xyzt_units", "qform_code", "sform_code"):
            try:
                header[key] = int(hdr[key])
            except (KeyError, TypeError, ValueError):
                pass
        return cls(tuple(img.shape[:3]), np.asarray(img.affine), header, mask)

    def describe(self) -> dict:
        """JSON summary for ``wideml info``: grid, voxel sizes (and unit), mask voxel count (None: no mask)."""
        units = {1: "m", 2: "mm", 3: "um"}.get(int(self.header.get("xyzt_units", 0)) & 7)
        return {"grid": list(self.grid_shape), "voxel_size": self.header.get("zooms"), "unit": units,
                "mask_voxels": int(self.mask.sum()) if self.mask is not None else None,
                "grid_voxels": int(np.prod(self.grid_shape))}

    # ---------------------------------------------------------------- on disk
    def to_attrs(self) -> dict:
        """JSON-able description (the mask itself is stored as the array :data:`MASK_NAME`)."""
        doc: dict[str, Any] = {
            "kind": "nifti",
            "grid_shape": list(self.grid_shape),
            "affine": [[float(v) for v in row] for row in self.affine],
            "header": {k: self.header[k] for k in HEADER_KEYS if k in self.header},
            "mask": MASK_NAME if self.mask is not None else None,
            "n_features": self.n_features,
        }
        if self.mask is not None:
            doc["mask_sha256"] = mask_sha256(self.mask)
        return doc

    @classmethod
    def from_attrs(cls, doc: Any, mask: np.ndarray | None, where: str) -> "SpatialReference":
        """Rebuild from :meth:`to_attrs` and the mask array; a malformed record is a StoreError naming ``where``."""
        try:
            grid = tuple(int(s) for s in doc["grid_shape"])
            affine = np.asarray(doc["affine"], dtype=np.float64)
            header = dict(doc.get("header") or {})
            wants_mask = doc.get("mask") is not None
            if affine.shape != (4, 4) or not np.isfinite(affine).all() or not grid or min(grid) < 1:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise StoreError(f"{where} has a malformed spatial_reference in its wideml attributes; recreate it with `wideml ingest`.") from None
        if wants_mask and mask is None:
            raise StoreError(f"{where} records a mask but has no '{MASK_NAME}' array; recreate it with `wideml ingest`.")
        ref = cls(grid, affine, header, mask if wants_mask else None)
        if wants_mask and doc.get("mask_sha256") not in (None, mask_sha256(ref.mask)):
            raise StoreError(f"{where} has a '{MASK_NAME}' array that differs from the mask it recorded; recreate it with `wideml ingest`.")
        if int(doc.get("n_features", ref.n_features)) != ref.n_features:
            raise StoreError(f"{where} records {doc['n_features']} spatial features but its mask has {ref.n_features}; recreate it.")
        return ref


def write_spatial(handle, ref: SpatialReference) -> dict:
    """Write the mask array (if any) into an open zarr group or h5py file; return the attrs entry to record.

    The caller puts the returned dict under :data:`SPATIAL_ATTR` in its wideml attrs.
    """
    if ref.mask is not None:
        data = ref.mask.astype(np.uint8)
        if hasattr(handle, "create_dataset") and not hasattr(handle, "create_array"):  # h5py
            handle.create_dataset(MASK_NAME, data=data, compression="gzip")
        else:
            arr = handle.create_array(MASK_NAME, shape=data.shape, dtype="uint8", chunks=data.shape, fill_value=0,
                                      config={"write_empty_chunks": True})
            arr[...] = data
    return ref.to_attrs()


def read_spatial(handle, attrs: dict, where: str) -> SpatialReference | None:
    """The spatial reference of an open zarr group / h5py file with wideml ``attrs``, or None when it has none."""
    doc = attrs.get(SPATIAL_ATTR)
    if doc is None:
        return None
    mask = None
    if isinstance(doc, dict) and doc.get("mask") is not None:
        try:
            mask = np.asarray(handle[MASK_NAME][...]).astype(bool)
        except KeyError:
            mask = None
        except Exception as exc:  # noqa: BLE001 - corrupt chunks surface as many types
            raise StoreError(f"{where} has an unreadable '{MASK_NAME}' array ({type(exc).__name__}); recreate it.") from None
    return SpatialReference.from_attrs(doc, mask, where)


def describe_line(info: dict) -> str:
    """One line of :meth:`SpatialReference.describe` for ``wideml info``."""
    grid = " x ".join(str(g) for g in info["grid"])
    line = f"grid {grid}"
    if info.get("voxel_size"):
        sizes = " x ".join(f"{float(z):g}" for z in info["voxel_size"])
        line += f", voxel size {sizes}{(' ' + info['unit']) if info.get('unit') else ''}"
    if info.get("mask_voxels") is None:
        return line + f", no mask (all {info['grid_voxels']} voxels are features)"
    return line + f", mask of {info['mask_voxels']} voxels (of {info['grid_voxels']})"


def check_spatial_record(attrs: dict, array_names, n_features: int, where: str) -> None:
    """From metadata only: a recorded spatial reference counts ``n_features`` and has its mask array.

    Raises
    ------
    StoreError
        Naming ``where`` when the record and X disagree.
    """
    doc = attrs.get(SPATIAL_ATTR)
    if doc is None:
        return
    counted = doc.get("n_features") if isinstance(doc, dict) else None
    if counted != n_features:
        raise StoreError(f"{where} has a spatial_reference for {counted!r} features but X has {n_features}; "
                         "it is inconsistent — recreate it with `wideml ingest`.")
    if doc.get("mask") is not None and MASK_NAME not in array_names:
        raise StoreError(f"{where} records a mask but has no '{MASK_NAME}' array; recreate it with `wideml ingest`.")


def require_nibabel():
    """Import nibabel or explain how to install it."""
    try:
        import nibabel
    except ImportError:
        raise WidemlError("reading NIfTI volumes needs nibabel; install wideml[neuro] (pip install 'wideml[neuro]').") from None
    return nibabel
