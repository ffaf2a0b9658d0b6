"""Small synthetic NIfTI folders for ingest tests: volumes, a rotated and shifted affine, a mask, a participants table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

GRID = (8, 9, 7)


def rotated_affine(angle: float = 0.3, offset=(-10.0, 4.0, 7.0), zooms=(2.0, 2.0, 2.5)) -> np.ndarray:
    """Voxel-to-world matrix with a rotation about z, anisotropic voxels and an offset."""
    c, s = np.cos(angle), np.sin(angle)
    aff = np.eye(4)
    aff[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.diag(zooms)
    aff[:3, 3] = offset
    return aff


@dataclass
class Scans:
    """A folder of one 3-D volume per subject, with its truth."""

    folder: Path
    vols: np.ndarray  # (n, *GRID) float32
    affine: np.ndarray
    mask: np.ndarray  # bool GRID, the 'brain'
    mask_file: Path
    y: np.ndarray  # str labels per subject, in subject order
    subjects: list[str]  # "sub-00", ...
    participants: Path  # participant_id, age, group — rows shuffled


def save(nib, data, affine, path: Path) -> Path:
    img = nib.Nifti1Image(np.asarray(data), affine)
    img.header.set_xyzt_units("mm", "sec")
    nib.save(img, path)
    return path


def make_scans(nib, root: Path, n: int = 12, seed: int = 0, suffix: str = "_T1w.nii.gz") -> Scans:
    """``n`` subjects ``sub-XX<suffix>``: noise inside a random 'brain' mask and zeros outside it, plus the table."""
    rng = np.random.default_rng(seed)
    aff = rotated_affine()
    mask = rng.random(GRID) < 0.55
    vols = np.where(mask, rng.standard_normal((n,) + GRID) + 3.0, 0.0).astype(np.float32)
    folder = root / "scans"
    folder.mkdir(parents=True)
    subjects = [f"sub-{i:02d}" for i in range(n)]
    for s, v in zip(subjects, vols):
        save(nib, v, aff, folder / f"{s}{suffix}")
    mask_file = save(nib, mask.astype(np.uint8), aff, root / "brain_mask.nii.gz")
    y = np.array(["control", "patient"])[np.arange(n) % 2]
    order = rng.permutation(n)
    table = root / "participants.tsv"
    table.write_text("participant_id\tage\tgroup\n" + "".join(f"{subjects[i]}\t{20 + i}\t{y[i]}\n" for i in order))
    return Scans(folder, vols, aff, mask, mask_file, y, subjects, table)
