"""Folders of NIfTI images: labels by subject id, an optional mask, the spatial reference kept.

The steps, cheapest checks first, so a bad input fails before the long pass:

1. every file's header (:func:`wideml.sources.nifti_rows.scan_nifti`): 3-D or
   4-D, one grid and affine for all;
2. labels: per file (two-column labels file naming the files), per sample (one
   column), or from a participants table matched by subject id
   (:mod:`wideml.sources.participants`);
3. the mask: a file in the same space, or ``auto`` (one bounded-memory pass,
   :mod:`wideml.sources.masking`);
4. the rows ``volume[mask]``, read in parallel blocks by
   :class:`~wideml.sources.nifti_rows.NiftiRows` and written by the writer loop,
   with the :class:`~wideml.storage.spatial.SpatialReference` (grid, affine,
   header fields, mask) recorded in the store (schema version 3). An unmasked
   store keeps ``feature_shape = grid`` as well; a masked one has none.

A folder source (:mod:`wideml.sources.folder`) hands its NIfTI files to
:meth:`NiftiFolderSource.from_files`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import ROWS, IngestOptions, Source
from wideml.sources.labels import validate_labels
from wideml.sources.locations import Location
from wideml.sources.masking import AUTO, auto_mask, load_mask_file
from wideml.sources.nifti_rows import (
    NiftiPlan,
    NiftiRows,
    keep_files,
    keep_samples,
    scan_nifti,
)
from wideml.sources.participants import match_subjects, read_table
from wideml.sources.sample_files import NIFTI, FolderFiles, folder_files
from wideml.storage.spatial import SpatialReference


class NiftiFolderSource(Source):
    """A folder of NIfTI images: one sample per 3-D volume (or per volume of a 4-D series).

    Passes over the files: one header read each; one full read for
    ``mask="auto"``; one full read for the rows.
    """

    kind = "nifti"
    access = ROWS
    accepts = frozenset({"label_column", "id_column", "mask"})

    def __init__(self, folder: Path, plan: NiftiPlan, voxels: np.ndarray | None, y: np.ndarray | None):
        space = plan.space
        self.plan, self.voxels = plan, voxels
        self.spatial = SpatialReference(space.grid_shape, space.affine, space.header, voxels)
        self.shape, self.dtype = (plan.n_samples, self.spatial.n_features), np.dtype(plan.dtype)
        self.labels, self.sample_ids = y, plan.ids
        self.feature_shape = space.grid_shape if voxels is None else None
        self.description, self.what, self.title = f"folder:{folder}", f"the files of {str(folder)!r}", f"ingest {folder.name}"

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> NiftiFolderSource:
        """Open a folder that holds NIfTI files (labels file first, then the files)."""
        found = folder_files(location.path, options)
        if found.kind != NIFTI:
            raise WidemlError(f"folder {str(location.path)!r} holds {found.kind} files, not NIfTI volumes; ingest it as a folder source.")
        return cls.from_files(location.path, found, options)

    @classmethod
    def from_files(cls, folder: Path, found: FolderFiles, options: IngestOptions) -> NiftiFolderSource:
        """Headers, labels and mask of the NIfTI files ``found.files`` (in sample order); no voxel read but for ``mask="auto"``."""
        plan = scan_nifti(found.files)
        y, keep = found.y, found.keep
        if found.table is not None:
            labels_path, label_column, id_column, delimiter = found.table
            names = [f.name for f in plan.files]
            ids, cells = read_table(labels_path, label_column, id_column, delimiter=delimiter, file_names=names)
            kept, file_labels = match_subjects(names, ids, cells, str(labels_path), options.drop_unlabelled)
            plan = keep_files(plan, kept)
            y = file_labels[plan.file_of_sample]
        elif y is not None and found.per_file:
            y = np.asarray(y)[plan.file_of_sample]
        elif y is not None and keep is not None:
            if len(keep) != plan.n_samples:
                raise WidemlError(f"the labels have {len(keep)} entries but the folder holds {plan.n_samples} volumes; "
                                  "give exactly one label per volume.")
            plan = keep_samples(plan, keep)
        if y is not None:
            y = validate_labels(y, plan.n_samples)
        return cls(folder, plan, _mask(options.mask, plan), y)

    def row_reader(self, dtype, allow_lossy_cast: bool = False) -> Callable[[int, int], np.ndarray]:
        return NiftiRows(self.plan.samples, self.plan.space.grid_shape, self.voxels, dtype, allow_lossy_cast)


def _mask(mask, plan: NiftiPlan) -> np.ndarray | None:
    """The voxels kept: None (all), ``auto`` (non-zero in every sample) or a mask file in the volumes' space."""
    if mask is None:
        return None
    if isinstance(mask, str) and mask.lower() == AUTO:
        return auto_mask(plan)
    if isinstance(mask, (str, os.PathLike)):
        return load_mask_file(mask, plan.space)
    raise WidemlError(f"mask must be a NIfTI file path or 'auto', not {type(mask).__name__}; pass --mask FILE or --mask auto.")
