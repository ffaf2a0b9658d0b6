"""Array sources for ingest: numpy arrays, ``.npy`` files, HDF5 datasets and zarr v3 arrays.

Each source is opened from its metadata only and read through a block reader
(``reader[rows, cols] -> ndarray``). File-backed readers are picklable and open
their file lazily in the process that runs the task, so a copy runs on any
scheduler; the in-memory reader is local-only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.storage import schema

_H5_SPEC = re.compile(r"^(?P<file>.+\.(?:h5|hdf5|hdf|he5)):(?P<dataset>/?[^:]+)$", re.IGNORECASE)


@dataclass
class ArraySource:
    """A 2-D array to ingest, with how to read it.

    Attributes
    ----------
    reader : object
        ``reader[rows, cols]`` returns a numpy block.
    shape : (n_samples, n_features)
    dtype : numpy.dtype
    chunks : (int, int)
        Stored chunk shape, ``(1, 1)`` when any block reads cheaply.
    local : bool
        The reader cannot leave this process (in-memory data).
    description : str
        Provenance recorded in the store.
    """

    reader: Any
    shape: tuple[int, int]
    dtype: np.dtype
    chunks: tuple[int, int]
    local: bool
    description: str


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


def check_matrix(shape, dtype, what: str) -> tuple[int, int]:
    """Require a numeric 2-D (n_samples, n_features) array; return its shape."""
    shape = tuple(int(s) for s in shape)
    dtype = np.dtype(dtype)
    if not (np.issubdtype(dtype, np.number) or dtype == bool) or dtype.kind == "c":
        raise WidemlError(f"{what} has dtype {dtype}, which is not numeric; X must hold real numbers (floats or integers).")
    if len(shape) == 1:
        raise WidemlError(
            f"{what} is 1-D with shape {shape}; X must be 2-D (n_samples, n_features) — reshape it, e.g. X.reshape(-1, 1) for one feature."
        )
    if len(shape) != 2:
        raise WidemlError(
            f"{what} is {len(shape)}-D with shape {shape}; flatten each sample to 2-D (n_samples, n_features) with "
            "X.reshape(len(X), -1), or ingest a folder of per-sample volumes to keep their shape as feature_shape."
        )
    if shape[0] < 1 or shape[1] < 1:
        raise WidemlError(f"{what} is empty (shape {shape}); give at least one sample and one feature.")
    return shape  # type: ignore[return-value]


def from_memory(array) -> ArraySource:
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
    return ArraySource(MemoryReader(array), shape, np.dtype(array.dtype), chunks, True, type(array).__name__)


def from_npy(path: Path) -> ArraySource:
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
    return ArraySource(NpyReader(str(path), dtype), shape, np.dtype(dtype), (1, 1), False, f"npy:{path}")


def split_hdf5_spec(source: str) -> tuple[str, str | None]:
    """Split ``file.h5:/path/to/dataset`` into the file and dataset (None without a dataset part)."""
    match = _H5_SPEC.match(str(source))
    if match and not Path(source).exists():
        return match.group("file"), match.group("dataset")
    return str(source), None


def _datasets(handle) -> list[str]:
    import h5py

    names: list[str] = []
    handle.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def from_hdf5(path: Path, dataset: str | None, missing_fill: bool = False) -> ArraySource:
    """Open a dataset of an HDF5 file (the only dataset when ``dataset`` is None).

    Unless ``missing_fill``, a dataset with chunks that were never written is refused naming one.
    """
    import h5py

    from wideml.storage.reader import HDF5Reader

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
            from wideml.storage.integrity import check_hdf5_complete

            check_hdf5_complete(obj, f"dataset {dataset!r} in {path}")
        chunks = tuple(obj.chunks) if obj.chunks else (1, 1)
    reader = HDF5Reader(str(path), dataset, shape, dtype, chunks)
    return ArraySource(reader, shape, np.dtype(dtype), chunks, False, f"hdf5:{path}:/{dataset}")


def from_zarr_array(path: Path, missing_fill: bool = False) -> ArraySource:
    """Open a zarr array directory (v3, or v2 — a v2 group holding ``X`` means that array).

    Unless ``missing_fill``, a v3 array with missing chunk files is refused
    naming one (one listing), and a chunk that goes missing later fails the copy.
    """
    import zarr

    from wideml.storage.reader import ZarrReader

    if (path / "zarr.json").is_file():
        try:
            meta = json.loads((path / "zarr.json").read_text())
        except (OSError, ValueError):
            raise WidemlError(f"{str(path)!r} has unreadable zarr metadata; the array is corrupt — recreate it.") from None
        if meta.get("node_type") == "group":
            if (path / schema.X_NAME / "zarr.json").is_file():
                raise WidemlError(f"{str(path)!r} is a feature store already; use `wideml rechunk` to copy it with other chunks.")
            raise WidemlError(f"{str(path)!r} is a zarr group, not an array; pass the path of the array inside it.")
    elif (path / ".zgroup").is_file():
        if not (path / schema.X_NAME / ".zarray").is_file():
            raise WidemlError(f"{str(path)!r} is a zarr v2 group without an array 'X'; pass the path of the array inside it.")
        path = path / schema.X_NAME
    try:
        arr = zarr.open_array(str(path), mode="r")
        dtype = np.dtype(arr.dtype)
    except Exception:  # noqa: BLE001 - corrupt metadata and string/struct dtypes surface as several errors
        raise WidemlError(f"zarr array {str(path)!r} is unreadable or not numeric; X must be a readable array of real numbers.") from None
    shape = check_matrix(arr.shape, dtype, f"zarr array {str(path)!r}")
    chunks = tuple(int(c) for c in arr.chunks)
    meta_file = next((path / name for name in ("zarr.json", ".zarray") if (path / name).is_file()), None)
    if not missing_fill and meta_file is not None:
        from wideml.storage.integrity import check_layout_complete, chunk_layout

        layout = chunk_layout(path, json.loads(meta_file.read_text()))
        if layout is not None:
            check_layout_complete(layout, f"the zarr array at {path}")
    reader = ZarrReader(str(path.parent), path.name, shape, dtype, chunks, missing="fill" if missing_fill else "error")
    return ArraySource(reader, shape, dtype, (chunks[0], chunks[1]), False, f"zarr:{path}")
