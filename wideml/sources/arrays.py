"""What array formats share: :class:`ArraySource`, random-access blocks of a 2-D array, and :func:`check_matrix`.

Each array format (:mod:`~wideml.sources.npy` for numpy arrays and ``.npy``
files, :mod:`~wideml.sources.hdf5`, :mod:`~wideml.sources.zarr_array`) is
opened from its metadata only and read through a block reader
(``reader[rows, cols] -> ndarray``). File-backed readers are picklable and open
their file lazily in the process that runs the task, so a copy runs on any
scheduler; the in-memory reader is local-only.

Labels come only from ``labels`` (an array or a labels file); an array source
cannot leave rows out, so missing labels are refused even with
``drop_unlabelled``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wideml.exceptions import WidemlError
from wideml.sources.base import FEATURES, IngestOptions, Source
from wideml.sources.labels import labels_for
from wideml.sources.locations import Location


class ArraySource(Source):
    """A 2-D array to ingest, with how to read it (``access = FEATURES``).

    Parameters
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
        Provenance recorded in the store (``"npy:/data/x.npy"``); messages
        name the source by what follows its first colon (in memory: ``X``).
    """

    access = FEATURES

    def __init__(self, reader: Any, shape: tuple[int, int], dtype, chunks: tuple[int, int], local: bool, description: str):
        self.reader, self.shape, self.dtype = reader, tuple(shape), np.dtype(dtype)
        self.chunks, self.local, self.description = tuple(chunks), bool(local), description
        self.what = "X" if local else repr(description.split(":", 1)[-1])

    @classmethod
    def open_array(cls, location: Location, options: IngestOptions) -> ArraySource:
        """Open the array at ``location`` (no labels); each array format defines it."""
        raise NotImplementedError

    @classmethod
    def open(cls, location: Location, options: IngestOptions) -> ArraySource:
        """Open the array, then its labels (one per row; missing labels refused, since no row can be left out)."""
        src = cls.open_array(location, options)
        ids, y, keep = labels_for(options.labels, src.shape[0], options.drop_unlabelled, options.delimiter)
        if keep is not None:
            raise WidemlError(f"{int((~keep).sum())} label(s) are missing, and wideml cannot leave rows out of an array source "
                              "(.npy, HDF5, zarr, in memory); remove those rows from X and the labels, or ingest a CSV or folder.")
        src.sample_ids, src.labels = ids, y
        return src

    def feature_reader(self) -> Any:
        return self.reader


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
