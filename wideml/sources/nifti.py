"""Ingest a folder of NIfTI images: labels by subject id, an optional mask, the spatial reference kept.

The steps, cheapest checks first, so a bad input fails before the long pass:

1. every file's header (:func:`wideml.sources.nifti_rows.scan_nifti`): 3-D or
   4-D, one grid and affine for all;
2. labels: per file (two-column labels file naming the files), per sample (one
   column), or from a participants table matched by subject id
   (:mod:`wideml.sources.participants`);
3. the mask: a file in the same space, or ``auto`` (one bounded-memory pass,
   :mod:`wideml.sources.masking`);
4. the rows ``volume[mask]`` written by :func:`wideml.sources.rows.write_rows_to_store`,
   with the :class:`~wideml.storage.spatial.SpatialReference` (grid, affine,
   header fields, mask) recorded in the store (schema version 3). An unmasked
   store keeps ``feature_shape = grid`` as well; a masked one has none.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.storage.casts import check_cast_dtypes
from wideml.sources.labels import validate_labels
from wideml.sources.rows import write_rows_to_store
from wideml.sources.masking import AUTO, auto_mask, load_mask_file
from wideml.sources.nifti_rows import NiftiRows, keep_files, keep_samples, scan_nifti
from wideml.sources.participants import match_subjects, read_table
from wideml.storage.spatial import SpatialReference


def ingest_nifti_folder(
    folder: Path,
    files: list[Path],
    out: str | os.PathLike,
    *,
    y=None,
    y_per_file: bool = False,
    table: tuple | None = None,
    drop_unlabelled: bool = False,
    keep=None,
    mask=None,
    dtype=None,
    sample_ids=None,
    feature_ids=None,
    allow_lossy_cast: bool = False,
    **common,
) -> Path:
    """Write the volumes of NIfTI ``files`` (one sample per 3-D volume) to a new store.

    Parameters
    ----------
    folder : Path
        The source folder (for messages and provenance).
    files : list of Path
        NIfTI files in sample order.
    out : path-like
    y : array-like, optional
        Labels per file (``y_per_file``) or per sample.
    table : (path, label_column, id_column[, delimiter]), optional
        A participants table: labels matched by subject id (overrides ``y``).
    drop_unlabelled : bool
        With ``table``: leave out files without a label instead of refusing.
    keep : ndarray of bool, optional
        Without ``table``: the samples (or, with ``y_per_file``, the files) whose
        label was not missing; ``y`` holds only theirs (``--drop-unlabelled``).
    mask : None, "auto" or path-like
        Keep only these voxels (see :mod:`wideml.sources.masking`).
    dtype, sample_ids, feature_ids, allow_lossy_cast, **common
        As for :func:`wideml.sources.ingest.ingest`.

    Returns
    -------
    Path

    Notes
    -----
    Passes over the files: one header read each; one full read for
    ``mask="auto"``; one full read for the rows.
    """
    from wideml.sources.ingest import output_dtype

    plan = scan_nifti(files)
    if table is not None:
        labels_path, label_column, id_column, *rest = table
        names = [f.name for f in plan.files]
        ids, cells = read_table(labels_path, label_column, id_column, delimiter=rest[0] if rest else None, file_names=names)
        kept, file_labels = match_subjects(names, ids, cells, str(labels_path), drop_unlabelled)
        plan = keep_files(plan, kept)
        y = file_labels[plan.file_of_sample]
    elif y is not None and y_per_file:
        y = np.asarray(y)[plan.file_of_sample]
    elif y is not None and keep is not None:
        if len(keep) != plan.n_samples:
            raise WidemlError(f"the labels have {len(keep)} entries but the folder holds {plan.n_samples} volumes; "
                              "give exactly one label per volume.")
        plan = keep_samples(plan, keep)
    if y is not None:
        y = validate_labels(y, plan.n_samples)
    space = plan.space
    if mask is None:
        voxels = None
    elif isinstance(mask, str) and mask.lower() == AUTO:
        voxels = auto_mask(plan)
    elif isinstance(mask, (str, os.PathLike)):
        voxels = load_mask_file(mask, space)
    else:
        raise WidemlError(f"mask must be a NIfTI file path or 'auto', not {type(mask).__name__}; pass --mask FILE or --mask auto.")
    ref = SpatialReference(space.grid_shape, space.affine, space.header, voxels)
    dt = output_dtype(plan.dtype, dtype)
    check_cast_dtypes(plan.dtype, dt, f"the files of {str(folder)!r}", allow_lossy_cast)
    reader = NiftiRows(plan.samples, space.grid_shape, voxels, dt, allow_lossy_cast)
    return write_rows_to_store(
        out, n=plan.n_samples, p=ref.n_features, dtype=dt, read_block=reader, label=f"ingest {folder.name}", y=y,
        source=f"folder:{folder}", sample_ids=sample_ids if sample_ids is not None else plan.ids, feature_ids=feature_ids,
        feature_shape=space.grid_shape if voxels is None else None, spatial=ref, **common,
    )
