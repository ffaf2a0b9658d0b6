"""Execution helpers of :class:`~wideml.estimators.encoder.estimator.EncoderClassifier` for new data and fitted arrays.

Input comes through :func:`wideml.inputs.door.fit_input` /
:func:`~wideml.inputs.door.memory_input` like every estimator's:
in-memory (numpy) input stays a plain array, and the chunk functions of
:mod:`wideml.passes.encoder` then run on it directly, with no dask graph.
Everything else is a feature-chunked dask array and each pass is one graph.
A fit's passes run through its :class:`~wideml.runner.fit_runner.FitPasses`;
:func:`wideml.runner.fit_runner.run_new_data` runs the passes over new data
(``transform``, ``predict``), which are not a fit's and are not counted.
"""

from __future__ import annotations

import uuid

import dask.array as da
import numpy as np

from wideml.inputs.door import FitInput
from wideml.runner.workdir import keep_folder_alive
from wideml.storage.reader import ZarrReader
from wideml.storage.writer import default_feature_chunk


def _feature_chunk(data: FitInput) -> int:
    """The training data's feature-chunk width (the default for in-memory input), used to save p-sized arrays chunked like X."""
    if not data.in_memory:
        return int(data.X.chunks[1][0])
    return default_feature_chunk(*data.numpy_X.shape, data.numpy_X.dtype.itemsize)


def _group_array(group: str, name: str, arrays: dict) -> da.Array:
    """A fitted p-sized array of the model group as a dask array, read by wideml's raw chunk reader.

    (``da.from_zarr`` opens the array through zarr and fsspec, about 10 ms a fit; the array was
    created by :func:`~wideml.runner.workdir.new_model_group` with the shape and chunks given.)
    """
    shape, chunks = arrays[name]
    reader = ZarrReader(group, name, shape, np.float64, chunks, missing="fill")  # zarr skips all-zero chunks of model arrays
    arr = da.from_array(reader, chunks=chunks, lock=False, asarray=True, meta=np.empty((0, 0)),
                        name=f"wideml-encoder-{name}-{uuid.uuid4().hex}")
    return keep_folder_alive(arr, group)


def _lazy(Xd, Xmem):
    """The dask view of new data (wrapping an in-memory array only when a graph needs it)."""
    return Xd if Xd is not None else da.from_array(Xmem)


__all__: list[str] = []
