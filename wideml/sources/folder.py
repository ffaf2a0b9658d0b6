"""Folder sources: one file per sample, ``.npy`` arrays here, NIfTI images through :mod:`wideml.sources.nifti`.

Every file holds one sample of the same shape; it is flattened in C order and
its shape kept as the store's ``feature_shape`` (so p-length outputs reshape
into volumes with ``numpy.reshape(v, feature_shape)``). The files are listed
and labelled by :func:`wideml.sources.sample_files.folder_files`: a
two-column labels file names the files (or their stems) and so chooses the
samples and their order; with ``label_column`` the labels file is a table
with a header matched to NIfTI files by subject id. Blocks of samples are
read by :class:`~wideml.sources.sample_files.FileRows`, a picklable reader,
so they are read in parallel on the active scheduler.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import ROWS, IngestOptions, Source
from wideml.sources.labels import validate_labels
from wideml.sources.locations import Location
from wideml.sources.nifti import NiftiFolderSource
from wideml.sources.sample_files import NIFTI, FileRows, folder_files, probe


class FolderSource(Source):
    """A folder of per-sample files: ``.npy`` arrays (NIfTI folders open as :class:`NiftiFolderSource`)."""

    kind = "folder"
    access = ROWS
    accepts = frozenset({"label_column", "id_column", "mask"})

    def __init__(self, folder: Path, kind: str, files: list[Path], stems: np.ndarray, y: np.ndarray | None):
        self.files, self.file_kind = files, kind
        self.sample_shape, self.dtype = probe(files[0], kind)
        p = int(np.prod(self.sample_shape)) if self.sample_shape else 1
        self.shape, self.labels, self.sample_ids = (len(files), p), y, stems
        self.feature_shape = self.sample_shape if len(self.sample_shape) >= 2 else None
        self.description, self.what, self.title = f"folder:{folder}", f"the files of {str(folder)!r}", f"ingest {folder.name}"

    @classmethod
    def check_options(cls, options: IngestOptions) -> None:
        if options.labels is None and (options.label_column is not None or options.id_column is not None):
            raise WidemlError("for a folder, --label-column and --id-column name columns of the labels table; give it with --labels FILE.")
        if options.id_column is not None and options.label_column is None:
            raise WidemlError("--id-column needs --label-column (the labels table's label column) for a folder; give both.")

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> Source:
        """Read the labels file, list the files; a folder of NIfTI files opens as a :class:`NiftiFolderSource`."""
        folder = location.path
        found = folder_files(folder, options)
        if found.kind == NIFTI:
            return NiftiFolderSource.from_files(folder, found, options)
        if options.mask is not None or found.table is not None:
            raise WidemlError(f"--mask and --label-column apply to folders of NIfTI volumes, and {str(folder)!r} holds .npy files; "
                              "give a labels file with one or two columns (file name, label) and no mask.")
        files, stems, y = found.files, found.stems, found.y
        if found.keep is not None:
            if len(found.keep) != len(files):
                raise WidemlError(f"the labels have {len(found.keep)} entries but {str(folder)!r} holds {len(files)} files; "
                                  "give one label per file.")
            files, stems = [f for f, k in zip(files, found.keep) if k], stems[found.keep]
        if y is not None:
            y = validate_labels(y, len(files))
        return cls(folder, found.kind, files, stems, y)

    def row_reader(self, dtype, allow_lossy_cast: bool = False) -> Callable[[int, int], np.ndarray]:
        return FileRows([str(f) for f in self.files], self.file_kind, self.sample_shape, dtype, allow_lossy_cast)
