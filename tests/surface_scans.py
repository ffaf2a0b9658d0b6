"""Synthetic CIFTI-2 and GIFTI files for the surface ingest and maps tests, written with nibabel.

The brain-model axis has a few hundred vertices per hemisphere (a medial
wall left out of each) and two small volume structures, like fsLR files in
miniature. Values carry a class effect so LOL has something to find.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

AFFINE = np.array([[-2.0, 0, 0, 90], [0, 2.0, 0, -126], [0, 0, 2.0, -72], [0, 0, 0, 1]])
VOLUME = (6, 5, 4)


def brain_axis(nib, n_left: int = 300, n_right: int = 280, nv_left: int = 320, nv_right: int = 300, shift: int = 0):
    """A BrainModelAxis: left and right cortex (vertices ``shift..``) then two voxel structures."""
    bm = nib.cifti2.BrainModelAxis
    left = bm.from_surface(np.arange(shift, shift + n_left), nv_left, "CortexLeft")
    right = bm.from_surface(np.arange(n_right) * (nv_right // n_right), nv_right, "CortexRight")
    thal = np.zeros(VOLUME, bool)
    thal[1:3, 1:4, 1:3] = True
    cereb = np.zeros(VOLUME, bool)
    cereb[4:, :2, 2:] = True
    return left + right + bm.from_mask(thal, "thalamus_left", AFFINE) + bm.from_mask(cereb, "cerebellum_right", AFFINE)


def save_cifti(nib, data: np.ndarray, axis, path: Path, series: bool = False) -> Path:
    """``data`` (rows x grayordinates) as a dscalar (maps ``m0..``) or dtseries (TR 0.8 s) file."""
    rows = (nib.cifti2.SeriesAxis(0, 0.8, data.shape[0]) if series else nib.cifti2.ScalarAxis([f"m{t}" for t in range(data.shape[0])]))
    img = nib.Cifti2Image(data, header=(rows, axis))
    img.nifti_header.set_intent("ConnDenseSeries" if series else "ConnDenseScalar")
    img.to_filename(str(path))
    return path


@dataclass
class CiftiFolder:
    folder: Path
    files: list[Path]
    axis: object
    X: np.ndarray           # what nibabel reads, rows stacked in sample order
    y: np.ndarray           # one label per sample
    ids: list[str]
    labels_file: Path       # one label per sample, in sample order


def make_cifti_folder(nib, root: Path, rows=(1, 3, 1, 2, 1, 1, 2, 1), series=False, seed=0, name="cifti") -> CiftiFolder:
    """Files ``sub-XX.dscalar.nii`` (or ``.dtseries.nii``) holding ``rows[f]`` maps each; label = file index parity."""
    rng = np.random.default_rng(seed)
    axis = brain_axis(nib)
    folder = root / name
    folder.mkdir()
    suffix = ".dtseries.nii" if series else ".dscalar.nii"
    files, blocks, y, ids = [], [], [], []
    for f, k in enumerate(rows):
        label = f % 2
        data = (rng.standard_normal((k, len(axis))) + 0.8 * label * (np.arange(len(axis)) % 7 == 0)).astype(np.float32)
        path = save_cifti(nib, data, axis, folder / f"sub-{f:02d}{suffix}", series)
        files.append(path)
        read = nib.load(str(path)).get_fdata()
        blocks.append(read)
        y += [label] * k
        ids += [f"sub-{f:02d}"] if k == 1 else [f"sub-{f:02d}:{t}" for t in range(k)]
    X = np.vstack(blocks)
    labels_file = root / f"{name}_labels.csv"
    labels_file.write_text("label\n" + "".join(f"{v}\n" for v in y))
    return CiftiFolder(folder, files, axis, X, np.asarray(y), ids, labels_file)


def save_gifti(nib, arrays, path: Path, structure: str | None = None) -> Path:
    """A GIFTI file with one float32 data array per row of ``arrays``."""
    darrays = [nib.gifti.GiftiDataArray(np.asarray(a, dtype=np.float32), intent="NIFTI_INTENT_NONE", datatype="NIFTI_TYPE_FLOAT32")
               for a in arrays]
    meta = nib.gifti.GiftiMetaData({"AnatomicalStructurePrimary": structure} if structure else {})
    nib.save(nib.gifti.GiftiImage(darrays=darrays, meta=meta), str(path))
    return path


@dataclass
class GiftiPairs:
    folder: Path
    X: np.ndarray           # left vertices then right, what nibabel reads
    y: np.ndarray
    ids: list[str]
    labels_file: Path
    n_left: int
    n_right: int


def make_gifti_pairs(nib, root: Path, rows=(1, 2, 1, 1, 3, 1), n_left=250, n_right=230, seed=1, name="gifti",
                     both=True) -> GiftiPairs:
    """``sub-XX_hemi-L_desc-x.func.gii`` and ``..._hemi-R_...`` (both hemispheres, or only the left one)."""
    rng = np.random.default_rng(seed)
    folder = root / name
    folder.mkdir()
    blocks, y, ids = [], [], []
    for f, k in enumerate(rows):
        label = "ab"[f % 2]
        left = rng.standard_normal((k, n_left)) + (f % 2) * (np.arange(n_left) % 5 == 0)
        right = rng.standard_normal((k, n_right))
        lp = save_gifti(nib, left, folder / f"sub-{f:02d}_hemi-L_desc-x.func.gii", "CortexLeft")
        parts = [np.stack([d.data for d in nib.load(str(lp)).darrays])]
        if both:
            rp = save_gifti(nib, right, folder / f"sub-{f:02d}_hemi-R_desc-x.func.gii", "CortexRight")
            parts.append(np.stack([d.data for d in nib.load(str(rp)).darrays]))
        blocks.append(np.hstack(parts))
        y += [label] * k
        stem = f"sub-{f:02d}_desc-x"
        ids += [stem] if k == 1 else [f"{stem}:{t}" for t in range(k)]
    labels_file = root / f"{name}_labels.csv"
    labels_file.write_text("label\n" + "".join(f"{v}\n" for v in y))
    return GiftiPairs(folder, np.vstack(blocks).astype(np.float64), np.asarray(y), ids, labels_file, n_left, n_right if both else 0)
