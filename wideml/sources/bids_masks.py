"""Brain masks of a BIDS derivatives tree: each scan's ``desc-brain_mask`` file, and their intersection.

The mask of a scan is the ``desc-brain`` file with suffix ``mask`` in the
same folder whose entities (but ``desc``) all appear in the scan's name with
the same values, the most specific one when several do (fMRIPrep:
``sub-01_ses-1_space-MNI152NLin2009cAsym_desc-brain_mask.nii.gz`` beside
``..._desc-preproc_T1w.nii.gz``; ``..._task-rest_run-1_space-..._desc-brain_mask``
beside the run's ``_bold``). Two equally specific masks are refused naming them.

The features are the voxels inside **every** selected scan's mask (the
intersection). Brain masks of subjects registered to one template differ at
the edges; the intersection keeps only voxels that are brain in every
sample, so no sample contributes values from outside its own brain (a
union would), and one mask serves the whole store as its spatial
reference. When the intersection keeps less than half (:data:`MIN_KEPT`)
of some mask's voxels, the mask with the smallest share of its voxels
inside the majority brain (voxels in at least half the masks) is refused
naming it: that is a failed registration or a mask from another space, not
edge noise. Masks that are
not on the scans' grid and affine are refused as well. ``--mask FILE`` or
``--mask auto`` replaces all of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.bids_entities import BidsFile
from wideml.sources.bids_query import few
from wideml.sources.masking import mask_of_image
from wideml.storage.spatial import SpatialReference, require_nibabel

#: A mask must keep at least this share of its voxels in the intersection.
MIN_KEPT = 0.5
_FIX = "select scans in one space with --space, or give one mask with --mask FILE"


def is_brain_mask(f: BidsFile) -> bool:
    """A ``desc-brain_mask`` file."""
    return f.suffix == "mask" and f.entities.get("desc") == "brain"


def mask_of(scan: BidsFile, masks: Sequence[BidsFile]) -> BidsFile | None:
    """The brain mask among ``masks`` (those of the scan's folder) whose entities (but desc) the scan shares, the most specific."""
    fits = []
    for m in masks:
        if m.path.parent != scan.path.parent or m.path == scan.path:
            continue
        own = {k: v for k, v in m.entities.items() if k != "desc"}
        if all(scan.entities.get(k) == v for k, v in own.items()):
            fits.append((len(own), m))
    if not fits:
        return None
    best = max(n for n, _ in fits)
    top = [m for n, m in fits if n == best]
    if len(top) > 1:
        raise WidemlError(f"{len(top)} brain masks fit {scan.relative!r} equally ({few(sorted(m.path.name for m in top))}); "
                          "give the mask with --mask FILE.")
    return top[0]


def scan_masks(scans: Sequence[BidsFile], everything: Sequence[BidsFile]) -> list[BidsFile]:
    """The mask of every scan, in order; a scan without one is refused (one sentence)."""
    by_folder: dict = {}
    for f in everything:
        if is_brain_mask(f):
            by_folder.setdefault(f.path.parent, []).append(f)
    found = [mask_of(s, by_folder.get(s.path.parent, ())) for s in scans]
    lacking = [s.relative for s, m in zip(scans, found) if m is None]
    if lacking:
        which = (f"none of the {len(scans)} selected scans has a" if len(lacking) == len(scans) else
                 f"{len(lacking)} of the {len(scans)} selected scans {'has' if len(lacking) == 1 else 'have'} no")
        raise WidemlError(f"{which} desc-brain_mask file beside it ({few(lacking)}); "
                          "give a mask with --mask FILE, or --mask auto (voxels non-zero in every scan).")
    return found


def intersect_masks(masks: Sequence[BidsFile], space: SpatialReference) -> np.ndarray:
    """The voxels inside every mask (each distinct file read once).

    Parameters
    ----------
    masks : sequence of BidsFile
        On the grid and affine of ``space``.
    space : SpatialReference
        The scans' space.

    Returns
    -------
    ndarray of bool, shape ``space.grid_shape``

    Raises
    ------
    WidemlError
        A mask in another space, an empty intersection, or a mask keeping less than :data:`MIN_KEPT` of its voxels.
    """
    nib = require_nibabel()
    unique = list({m.path: m for m in masks}.values())
    count = np.zeros(space.grid_shape, dtype=np.uint32)
    packed = []
    for m in unique:
        if not Path(m.path).is_file():
            raise WidemlError(f"brain mask {m.relative!r} is a link to a file that is not there (a git-annex file not fetched?); "
                              "fetch it (datalad get) or give --mask FILE.")
        try:
            img = nib.load(str(m.path))
        except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
            raise WidemlError(f"cannot read brain mask {m.relative!r} as NIfTI ({type(exc).__name__}); check the file or give --mask FILE.") from None
        one = mask_of_image(img, space, f"brain mask {m.relative!r}", _FIX)
        count += one
        packed.append(np.packbits(one.ravel()))
        del img, one
    both = count == len(unique)
    if both.any() and all(int(both.sum()) >= MIN_KEPT * int(np.unpackbits(b).sum()) for b in packed):
        return both
    majority = (count * 2 >= len(unique)).ravel()
    shares = [float(majority[np.unpackbits(b, count=majority.size).astype(bool)].mean()) for b in packed]
    worst = int(np.argmin(shares)) if min(shares) < MIN_KEPT else None
    if worst is None:  # no single outlier: the masks simply share too little
        raise WidemlError(f"the {len(unique)} brain masks share only {int(both.sum())} voxels (less than {MIN_KEPT:.0%} of some masks); "
                          "check the scans' registration, or give one mask with --mask FILE.")
    raise WidemlError(f"brain mask {unique[worst].relative!r} has only {shares[worst]:.0%} of its voxels inside the brain of most "
                      f"other masks (at least {MIN_KEPT:.0%} expected), a failed registration or another space; check that scan, "
                      "leave the subject out with --subjects, or give one mask with --mask FILE.")
