"""HDF5 sources: one dataset of an HDF5 file, ``file.h5:/path/to/dataset`` or ``file.h5`` with ``dataset=`` (``--dataset``).

Without a dataset name the file must hold a single dataset (a file holding a
feature store is pointed at ``wideml rechunk``). A chunked dataset is read
whole chunks at a time by :class:`wideml.storage.reader.HDF5Reader`, opened
lazily in each task; chunks never written are refused naming one unless
``missing_chunks_are_fill``.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.arrays import ArraySource, check_matrix
from wideml.sources.base import IngestOptions
from wideml.sources.locations import Location
from wideml.storage import schema
from wideml.storage.integrity import check_hdf5_complete
from wideml.storage.reader import HDF5Reader


class Hdf5Source(ArraySource):
    """A dataset of an HDF5 file."""

    kind = "hdf5"
    accepts = frozenset({"dataset"})

    @classmethod
    def open_array(cls, location: Location, options: IngestOptions) -> Hdf5Source:
        return from_hdf5(location.path, location.dataset or options.dataset, missing_fill=options.missing_chunks_are_fill)


def _datasets(handle) -> list[str]:
    names: list[str] = []
    handle.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def from_hdf5(path: Path, dataset: str | None, missing_fill: bool = False) -> Hdf5Source:
    """Open a dataset of an HDF5 file (the only dataset when ``dataset`` is None).

    Unless ``missing_fill``, a dataset with chunks that were never written is refused naming one.
    """
    try:
        handle = h5py.File(path, "r")
    except OSError:
        raise WidemlError(f"{str(path)!r} is not a readable HDF5 file; check the path or the file.") from None
    with handle:
        names = _datasets(handle)
        if dataset is None:
            if schema.X_NAME in handle and len(names) > 1:
                raise WidemlError(
                    f"{str(path)!r} looks like a feature store already; use `wideml rechunk` to copy it, or pick a dataset with --dataset NAME."
                )
            if len(names) != 1:
                listed = ", ".join(names[:5]) or "none"
                raise WidemlError(f"{str(path)!r} holds {len(names)} datasets ({listed}); choose one with --dataset NAME or {path}:/NAME.")
            dataset = names[0]
        dataset = dataset.lstrip("/")
        obj = handle.get(dataset)
        if not isinstance(obj, h5py.Dataset):
            listed = ", ".join(names[:5]) or "none"
            raise WidemlError(f"{str(path)!r} has no dataset {dataset!r} (it holds: {listed}); pass one of those names.")
        dtype = obj.dtype
        if dtype.kind in "OSUV":
            raise WidemlError(f"dataset {dataset!r} in {str(path)!r} has dtype {dtype}, which is not numeric; X must hold real numbers.")
        shape = check_matrix(obj.shape, dtype, f"dataset {dataset!r} in {str(path)!r}")
        if not missing_fill:
            check_hdf5_complete(obj, f"dataset {dataset!r} in {path}")
        chunks = tuple(obj.chunks) if obj.chunks else (1, 1)
    reader = HDF5Reader(str(path), dataset, shape, dtype, chunks)
    return Hdf5Source(reader, shape, np.dtype(dtype), chunks, False, f"hdf5:{path}:/{dataset}")
