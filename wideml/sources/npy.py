"""numpy sources: an in-memory 2-D array-like, and a ``.npy`` file read through a memory map.

An in-memory source may be any object with ``shape`` and ``dtype`` that
slices to numpy (numpy arrays and memory maps, h5py/zarr array objects, dask
arrays), or anything :func:`numpy.asarray` turns into a 2-D array. It is read
on local threads. A ``.npy`` file is opened with ``numpy.load(mmap_mode="r")``
in every process that reads a block, so only the pages of a stripe are read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.arrays import ArraySource, check_matrix
from wideml.sources.base import IngestOptions
from wideml.sources.locations import Location


class MemoryReader:
    """Blocks of an in-memory array-like (numpy, h5py/zarr array objects, dask arrays)."""

    def __init__(self, array):
        self.array, self.dtype = array, np.dtype(array.dtype)

    def __getitem__(self, key):
        block = self.array[key]
        if hasattr(block, "compute"):
            block = block.compute(scheduler="sync")
        return np.asarray(block)


class NpyReader:
    """Blocks of a ``.npy`` file through a read-only memory map opened lazily per process."""

    def __init__(self, path: str, dtype):
        self.path, self.dtype = str(path), np.dtype(dtype)
        self._mm = None

    def __getstate__(self):
        return {**self.__dict__, "_mm": None}

    def __getitem__(self, key):
        if self._mm is None:
            self._mm = np.load(self.path, mmap_mode="r")
        return np.array(self._mm[key])


class MemorySource(ArraySource):
    """An array-like held by the caller (``wideml.ingest(X, ...)``)."""

    kind = "memory"

    @classmethod
    def open_array(cls, location: Location, options: IngestOptions) -> MemorySource:
        return from_memory(location.obj)


class NpySource(ArraySource):
    """A ``.npy`` file (memory-mapped)."""

    kind = "npy"

    @classmethod
    def open_array(cls, location: Location, options: IngestOptions) -> NpySource:
        return from_npy(location.path)


def from_memory(array) -> MemorySource:
    """Wrap an in-memory (or otherwise array-like) object."""
    if not hasattr(array, "shape") or not hasattr(array, "dtype"):
        try:
            array = np.asarray(array)
        except Exception:  # noqa: BLE001 - ragged nested lists and the like
            raise WidemlError("X could not be read as an array; give a 2-D numeric array of shape (n_samples, n_features).") from None
    shape = check_matrix(array.shape, array.dtype, "X")
    chunks = tuple(getattr(array, "chunks", None) or (1, 1))
    if chunks and isinstance(chunks[0], tuple):  # dask: chunks per block
        chunks = (max(chunks[0]), max(chunks[1]))
    return MemorySource(MemoryReader(array), shape, np.dtype(array.dtype), chunks, True, type(array).__name__)


def from_npy(path: Path) -> NpySource:
    """Open a ``.npy`` file as a memory map (nothing is read)."""
    try:
        mm = np.load(path, mmap_mode="r")
    except ValueError as exc:
        if "object" in str(exc).lower() or "pickle" in str(exc).lower():
            raise WidemlError(f"{str(path)!r} holds Python objects, which are not numeric; save X as a float or integer array.") from None
        raise WidemlError(f"{str(path)!r} is not a readable .npy file ({exc}); re-save it with numpy.save.") from None
    except OSError as exc:
        raise WidemlError(f"cannot read {str(path)!r} ({exc.strerror or exc}); check the file.") from None
    shape = check_matrix(mm.shape, mm.dtype, f"{str(path)!r}")
    dtype = mm.dtype
    del mm
    return NpySource(NpyReader(str(path), dtype), shape, np.dtype(dtype), (1, 1), False, f"npy:{path}")
