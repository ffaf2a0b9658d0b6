"""Per-sample files of a folder source: listing them, one ``.npy`` array or one NIfTI volume per sample.

Every file holds one sample of the same shape; it is flattened in C order and
the shape is kept as the store's ``feature_shape`` (so p-length outputs reshape
into volumes with ``numpy.reshape(v, feature_shape)``). NIfTI volumes need
nibabel (``pip install wideml[neuro]``); their scaling (slope/intercept) is
applied. The files are read by :class:`FileRows`, a picklable block reader, so
blocks of samples are read in parallel on the active scheduler.

Folder sources are :mod:`wideml.sources.folder` (``.npy`` files) and
:mod:`wideml.sources.nifti` (3-D and 4-D files, masks, the spatial reference,
labels by subject id); both start from :func:`folder_files`. :func:`probe`
reads one file's shape and dtype (also for size estimates).

A link among the sample files whose target is gone, and two files for one
sample (``sub-01.nii`` beside ``sub-01.nii.gz``: one stem, one sample id) are
refused naming them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import IngestOptions
from wideml.sources.labels import load_labels, match_files
from wideml.storage.casts import checked_cast
from wideml.storage.label_cells import listed
from wideml.storage.spatial import require_nibabel

NPY = "npy"
NIFTI = "nifti"
NIFTI_SUFFIXES = (".nii", ".nii.gz")


def file_kind(path: Path) -> str | None:
    """``"npy"``, ``"nifti"`` or None for other files."""
    name = path.name.lower()
    if name.endswith(".npy"):
        return NPY
    if name.endswith(NIFTI_SUFFIXES):
        return NIFTI
    return None


def stem(path: Path) -> str:
    """File name without its data extension (``sub-01.nii.gz`` → ``sub-01``)."""
    name = path.name
    for suffix in (".nii.gz", ".nii", ".npy"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def list_sample_files(folder: Path) -> tuple[str, list[Path]]:
    """The per-sample files of a folder (sorted by name) and their kind.

    Raises
    ------
    WidemlError
        If the folder has none, mixes ``.npy`` and NIfTI files, holds a broken
        link to a sample file, or two files with one stem (one sample id).
    """
    entries = sorted((f for f in folder.iterdir() if file_kind(f)), key=lambda f: f.name)
    broken = [f for f in entries if f.is_symlink() and not f.exists()]
    if broken:
        more = f" (and {len(broken) - 1} more broken link(s))" if len(broken) > 1 else ""
        raise WidemlError(f"{broken[0].name!r} in folder {str(folder)!r} is a broken link to {os.readlink(broken[0])!r}{more}; "
                          "restore the target or remove the link.")
    files = [f for f in entries if f.is_file()]
    by_stem: dict[str, list[str]] = {}
    for f in files:
        by_stem.setdefault(stem(f), []).append(f.name)
    twice = [names for names in by_stem.values() if len(names) > 1]
    if twice:
        more = f" (and {len(twice) - 1} more sample(s) with two files)" if len(twice) > 1 else ""
        raise WidemlError(f"folder {str(folder)!r} holds {len(twice[0])} files for one sample {stem(Path(twice[0][0]))!r} "
                          f"({listed(twice[0], 3)}){more}; keep one file per sample.")
    kinds = {file_kind(f) for f in files}
    if not files:
        raise WidemlError(
            f"folder {str(folder)!r} has no .npy or .nii/.nii.gz files; give a folder with one file per sample "
            "(or a .npy, .h5 or .csv file)."
        )
    if len(kinds) > 1:
        raise WidemlError(f"folder {str(folder)!r} mixes .npy and NIfTI files; keep one kind of per-sample file in it.")
    if NIFTI in kinds:
        require_nibabel()
    return kinds.pop(), files


def _load(path: str, kind: str) -> np.ndarray:
    """One sample's array (memory-mapped for .npy; NIfTI scaling applied)."""
    if kind == NPY:
        try:
            return np.load(path, mmap_mode="r")
        except ValueError:
            raise WidemlError(f"{path!r} holds Python objects, which are not numeric; save each sample as a numeric array.") from None
        except OSError as exc:
            raise WidemlError(f"cannot read {path!r} ({exc}); check the file.") from None
    nib = require_nibabel()
    try:
        return np.asanyarray(nib.load(path).dataobj)
    except Exception as exc:  # noqa: BLE001 - nibabel raises many types for bad files
        raise WidemlError(f"cannot read NIfTI volume {path!r} ({type(exc).__name__}: {exc}); check the file.") from None


def probe(path: Path, kind: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of one sample file, read from its header."""
    if kind == NPY:
        arr = _load(str(path), kind)
        return tuple(arr.shape), arr.dtype
    nib = require_nibabel()
    try:
        img = nib.load(str(path))
        scaled = img.dataobj.slope != 1 or img.dataobj.inter != 0
        dtype = np.dtype(np.float32) if scaled else np.dtype(img.get_data_dtype())  # scaled integers: float32 is plenty
        return tuple(int(s) for s in img.shape), dtype
    except Exception as exc:  # noqa: BLE001
        raise WidemlError(f"cannot read NIfTI volume {str(path)!r} ({type(exc).__name__}); check the file.") from None


class FileRows:
    """Read blocks of samples, one file per row, each flattened to ``p`` features.

    Parameters
    ----------
    paths : list of str
        One file per sample, in row order.
    kind : {"npy", "nifti"}
    shape : tuple of int
        Every file's array shape (checked on read).
    dtype : dtype
        dtype of the blocks returned.
    allow_lossy_cast : bool, default False
        Cast each file to ``dtype`` even when values change; by default such a
        cast is refused naming the file and the value (:mod:`wideml.storage.casts`).
    """

    def __init__(self, paths: list[str], kind: str, shape: tuple[int, ...], dtype="float32", allow_lossy_cast: bool = False):
        self.paths, self.kind, self.shape = [str(p) for p in paths], kind, tuple(shape)
        self.p, self.dtype = int(np.prod(self.shape)), np.dtype(dtype)
        self.allow_lossy_cast = bool(allow_lossy_cast)

    def __call__(self, r0: int, r1: int) -> np.ndarray:
        """Rows ``r0:r1`` of X, shape ``(r1 - r0, p)``."""
        out = np.empty((r1 - r0, self.p), dtype=self.dtype)
        for i, path in enumerate(self.paths[r0:r1]):
            arr = _load(path, self.kind)
            if tuple(arr.shape) != self.shape:
                raise WidemlError(
                    f"{path!r} has shape {tuple(arr.shape)} but the first sample has {self.shape}; every sample needs the same shape."
                )
            if arr.dtype.kind not in "biuf":
                raise WidemlError(f"{path!r} has dtype {arr.dtype}, which is not numeric; save each sample as real numbers.")
            row = np.asarray(arr).reshape(1, -1)
            out[i] = checked_cast(row, self.dtype, source=repr(path), allow_lossy=self.allow_lossy_cast, row0=r0 + i)[0]
            del arr, row
        return out


def folder_samples(folder: Path, ids: np.ndarray | None) -> tuple[str, list[Path], np.ndarray]:
    """Files in sample order and their sample ids.

    With ``ids`` (the first column of a labels file) the samples are those
    files, in that order; files the labels do not name are left out. Without,
    every sample file of the folder, sorted by name.
    """
    kind, files = list_sample_files(folder)
    if ids is not None:
        files = match_files(files, ids, stem)
    return kind, files, np.array([stem(f) for f in files], dtype=str)


@dataclass
class FolderFiles:
    """The sample files of a folder source and the labels read before them.

    Attributes
    ----------
    kind : {"npy", "nifti"}
    files : list of Path
        In sample order (a two-column labels file chooses and orders them).
    stems : ndarray of str
        The files' sample ids.
    y : ndarray or None
        Labels per file (``per_file``: a two-column labels file) or per sample, None without.
    per_file : bool
    keep : ndarray of bool or None
        One-column labels with ``drop_unlabelled``: which samples keep a label (``y`` holds only theirs).
    table : tuple or None
        ``(labels, label_column, id_column, delimiter)``: a participants table to match by subject id.
    """

    kind: str
    files: list[Path]
    stems: np.ndarray
    y: np.ndarray | None
    per_file: bool
    keep: np.ndarray | None
    table: tuple | None


def folder_files(folder: Path, options: IngestOptions) -> FolderFiles:
    """Read the labels file (unless it is a participants table), then list the folder's sample files in sample order."""
    table = ((options.labels, options.label_column, options.id_column, options.delimiter)
             if options.label_column is not None else None)
    label_ids, y, keep = ((None, None, None) if options.labels is None or table
                          else load_labels(options.labels, delimiter=options.delimiter, drop_unlabelled=options.drop_unlabelled))
    keep = keep if label_ids is None else None  # a two-column file: files of missing labels are not named, so left out
    kind, files, stems = folder_samples(folder, label_ids)
    return FolderFiles(kind, files, stems, y, label_ids is not None, keep, table)
