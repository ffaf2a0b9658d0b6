"""Masks for NIfTI ingest: a mask file in the volumes' space, or ``auto`` (non-zero in every sample).

Convention: a voxel is in the mask when its value is non-zero and finite, so
a 0/1 mask, a label image (0 = outside) and a probability map thresholded at
zero all work; NaN counts as outside. Only in-mask voxels become features
(``p`` = voxels in the mask). An empty mask is refused.

``auto`` finds the voxels non-zero (and finite) in every sample in one
bounded-memory pass before the ingest: the samples are cut into a few groups,
each task reads its files one slab at a time and keeps a running boolean AND
of grid size, and the tasks' packed results are AND-ed here. Memory: a few
grid-sized boolean arrays plus one slab of volumes per running task; never
all samples.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import dask
import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.nifti_rows import NiftiPlan, iter_slabs, slab_volumes
from wideml.storage.copy_plan import concurrency
from wideml.storage.rechunk import run_tasks
from wideml.storage.spatial import SpatialReference, require_nibabel

AUTO = "auto"
_FIX = "resample the mask to the volumes (e.g. nilearn.image.resample_to_img(mask, volume, interpolation='nearest'))"


def inside(values: np.ndarray) -> np.ndarray:
    """The mask convention: non-zero and finite (NaN and inf count as outside)."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.isfinite(values) & (values != 0)
    return values != 0


def load_mask_file(path, space: SpatialReference) -> np.ndarray:
    """The boolean mask of a NIfTI file in ``space`` (same grid and affine), read a few slices at a time.

    Parameters
    ----------
    path : path-like
        A 3-D NIfTI image (a 4-D one with a single volume is accepted).
    space : SpatialReference
        The volumes' space (from the first file).

    Returns
    -------
    ndarray of bool, shape ``space.grid_shape``

    Raises
    ------
    WidemlError
        A missing or unreadable file, another grid or affine, or no voxel inside.
    """
    nib = require_nibabel()
    path = Path(path).expanduser()
    if not path.is_file():
        raise WidemlError(f"mask file {str(path)!r} does not exist; check the path, or use --mask auto.")
    try:
        img = nib.load(str(path))
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
        raise WidemlError(f"cannot read mask file {str(path)!r} as NIfTI ({type(exc).__name__}); give a .nii/.nii.gz mask.") from None
    return mask_of_image(img, space, f"mask file {str(path)!r}")


def mask_of_image(img, space: SpatialReference, name: str = "the mask", fix: str = _FIX) -> np.ndarray:
    """The boolean mask of a nibabel image in ``space`` (same grid and affine), read a few slices at a time.

    Parameters
    ----------
    img : nibabel image
        3-D (a 4-D one with a single volume is accepted).
    space : SpatialReference
        The data's space.
    name : str
        How errors name the mask, e.g. ``"mask file 'm.nii.gz'"``.
    fix : str
        The fix an error suggests when the space differs.

    Returns
    -------
    ndarray of bool, shape ``space.grid_shape``
    """
    shape = tuple(int(s) for s in img.shape)
    if len(shape) < 3 or any(s != 1 for s in shape[3:]):
        raise WidemlError(f"{name} has shape {shape}; give a 3-D mask on the grid {space.grid_shape} of the volumes.")
    differs = space.same_space(SpatialReference.from_image(img))
    if differs is not None:
        raise WidemlError(f"{name} has {differs} than the volumes; {fix}.")
    mask = np.zeros(space.grid_shape, dtype=bool)
    step = max(1, (16 * 2**20) // max(1, shape[0] * shape[1]))
    try:
        for k0 in range(0, shape[2], step):
            block = np.asanyarray(img.dataobj[:, :, k0 : k0 + step, ...]).reshape(shape[0], shape[1], -1)
            mask[:, :, k0 : k0 + step] = inside(block)
    except WidemlError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise WidemlError(f"cannot read the voxels of {name} ({type(exc).__name__}); check the file.") from None
    if not mask.any():
        raise WidemlError(f"{name} has no non-zero voxel, so no feature would be stored; give a mask with voxels inside.")
    return mask


def _and_of_group(samples, start: int, stop: int, grid: tuple[int, ...], slab: int) -> np.ndarray:
    """Task: packed bits of the voxels non-zero and finite in every sample ``start:stop``."""
    acc = np.ones(grid, dtype=bool)
    for _, path, data, scaling in iter_slabs(samples, start, stop, slab):
        if tuple(data.shape[:3]) != grid:
            raise WidemlError(f"NIfTI file {path!r} has grid {tuple(data.shape[:3])} but the first file has {grid}; resample it.")
        if scaling is not None:  # the stored integers still need the file's slope and intercept
            from nibabel.volumeutils import apply_read_scaling

            data = apply_read_scaling(data, *scaling)
        acc &= inside(data).all(axis=3)
    return np.packbits(acc.ravel())


def auto_mask(plan: NiftiPlan, groups: int | None = None) -> np.ndarray:
    """Voxels non-zero and finite in every sample of ``plan`` (one bounded-memory pass over the files).

    Parameters
    ----------
    plan : NiftiPlan
    groups : int, optional
        Tasks the samples are cut into (default twice the running tasks, at
        most the number of samples).

    Returns
    -------
    ndarray of bool, shape ``plan.space.grid_shape``

    Raises
    ------
    WidemlError
        When no voxel is non-zero in every sample.
    """
    grid = plan.space.grid_shape
    n = plan.n_samples
    groups = int(max(1, min(n, groups or 2 * concurrency())))
    bounds = np.linspace(0, n, groups + 1).astype(int)
    slab = slab_volumes(grid)
    tasks = [dask.delayed(_and_of_group, pure=False)(plan.samples, int(a), int(b), grid, slab)
             for a, b in itertools.pairwise(bounds) if b > a]
    mask = np.ones(int(np.prod(grid)), dtype=bool)
    for bits in run_tasks(tasks, label=f"mask auto: non-zero voxels of {n} samples", local=False):
        mask &= np.unpackbits(bits, count=mask.size).astype(bool)
    if not mask.any():
        raise WidemlError(
            f"no voxel is non-zero in every one of the {n} samples, so --mask auto would keep nothing; "
            "give a mask file with --mask FILE (e.g. a brain mask in the volumes' space)."
        )
    return mask.reshape(grid)
